"""CachedGPTModel runs each block without its cache: it returns the new caches but never gives them back to the blocks."""
MODULE = "gpt"
LOSES = ["s10.cached.model", "s10.gpt.writes"]
MENTIONS = "returned caches holding"
ONLY = True


class CachedGPTModel(CachedGPTModel):
    def forward(self, in_idx, caches=None):
        past = 0 if caches is None else caches[0][0].shape[2]
        positions = torch.arange(past, past + in_idx.shape[1], device=in_idx.device)
        x = self.drop_emb(self.tok_emb(in_idx) + self.pos_emb(positions))
        new_caches = []
        for block in self.trf_blocks:
            x, cache = block(x)
            new_caches.append(cache)
        return self.out_head(self.final_norm(x)), new_caches
