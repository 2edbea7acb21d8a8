"""CachedGPTModel subclasses GPTModel, swapping its blocks for a ModuleList of cached ones, and counts past with a loop variable."""
MODULE = "gpt"


class CachedGPTModel(GPTModel):
    def __init__(self, cfg):
        super().__init__(cfg)
        self.trf_blocks = nn.ModuleList(CachedTransformerBlock(cfg) for _ in range(cfg["n_layers"]))

    def forward(self, in_idx, caches=None):
        if caches is None:
            caches = [None] * len(self.trf_blocks)
            past = 0
        else:
            keys, _ = caches[0]
            past = keys.size(-2)
        n = in_idx.size(1)
        x = self.tok_emb(in_idx) + self.pos_emb(torch.arange(past, past + n, device=in_idx.device))
        x = self.drop_emb(x)
        returned = []
        for i, block in enumerate(self.trf_blocks):
            x, kv = block(x, cache=caches[i])
            returned.append(kv)
        return self.out_head(self.final_norm(x)), returned
