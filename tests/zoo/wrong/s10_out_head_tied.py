"""GPTModel ties out_head to the token embeddings (one shared matrix), as OpenAI's checkpoint does; the book's model does not."""
MODULE = "gpt"
LOSES = ["s10.gpt.structure", "s10.gpt.trained", "s10.gpt.writes"]
MENTIONS = "tied"


class GPTModel(GPTModel):
    def __init__(self, cfg):
        super().__init__(cfg)
        self.out_head.weight = self.tok_emb.weight
