"""CachedGPTModel numbers the new tokens from 0 even when caches hold earlier ones."""
MODULE = "gpt"
LOSES = ["s10.cached.model", "s10.gpt.writes"]
MENTIONS = "position embedding"
ONLY = True


class CachedGPTModel(CachedGPTModel):
    def forward(self, in_idx, caches=None):
        positions = torch.arange(in_idx.shape[1], device=in_idx.device)
        x = self.drop_emb(self.tok_emb(in_idx) + self.pos_emb(positions))
        caches = caches or [None] * len(self.trf_blocks)
        new_caches = []
        for block, cache in zip(self.trf_blocks, caches):
            x, cache = block(x, cache)
            new_caches.append(cache)
        return self.out_head(self.final_norm(x)), new_caches
