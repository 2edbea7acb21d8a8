"""CachedGPTModel reads how many tokens are cached from the second block's cache: a model of one block has none."""
MODULE = "gpt"
LOSES = ["s10.cached.model"]
MENTIONS = "one block"
ONLY = True


class CachedGPTModel(CachedGPTModel):
    def forward(self, in_idx, caches=None):
        past = 0 if caches is None else caches[1][0].shape[2]
        positions = torch.arange(past, past + in_idx.shape[1], device=in_idx.device)
        x = self.drop_emb(self.tok_emb(in_idx) + self.pos_emb(positions))
        caches = caches or [None] * len(self.trf_blocks)
        new_caches = []
        for block, cache in zip(self.trf_blocks, caches):
            x, cache = block(x, cache)
            new_caches.append(cache)
        return self.out_head(self.final_norm(x)), new_caches
