"""GPTModel's out_head is a plain nn.Linear(emb_dim, vocab_size), with the bias it has by default."""
MODULE = "gpt"
LOSES = ["s10.gpt.structure", "s10.gpt.loads", "s10.gpt.trained"]
MENTIONS = "out_head.bias"


class GPTModel(GPTModel):
    def __init__(self, cfg):
        super().__init__(cfg)
        self.out_head = nn.Linear(cfg["emb_dim"], cfg["vocab_size"])
