"""TransformerBlock builds its attention with num_heads=cfg["n_layers"], a slip of the config's keys: a correct
MultiHeadAttention, configured wrong (2 heads of 32 where the trained model has 4 of 16; the weights have the same
shapes, so they load). The twin of each end-to-end check keeps the block's own configuration and swaps only the
attention's code, so its feedback sends the student to this stage's code, not to their stage 4 layer."""
MODULE = "gpt"
LOSES = ["s10.gpt.trained", "s10.gpt.writes"]
ONLY = True
MENTIONS = {"s10.gpt.trained": "this still fails, so there is a mistake in this stage's code"}


class TransformerBlock(TransformerBlock):
    def __init__(self, cfg):
        super().__init__(cfg)
        self.att = MultiHeadAttention(d_in=cfg["emb_dim"], d_out=cfg["emb_dim"], context_length=cfg["context_length"],
                                      dropout=cfg["drop_rate"], num_heads=cfg["n_layers"], qkv_bias=cfg["qkv_bias"])
