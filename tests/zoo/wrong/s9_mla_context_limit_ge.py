"""MultiHeadLatentAttention refuses a latent cache that would fill context_length exactly (>= where > belongs). The
probe caches 8 tokens in a context of 10 and then feeds 2, the exact edge, which must be accepted."""
MODULE = "frontier"
LOSES = ["s9.mla.context_limit"]
ONLY = True
MENTIONS = "8 + 2 tokens fill context_length 10 exactly"


class MultiHeadLatentAttention(MultiHeadLatentAttention):
    def forward(self, x, cache=None):
        past = 0 if cache is None else cache.shape[1]
        if past + x.shape[1] >= self.mask.shape[0]:
            raise ValueError(f"{past} cached + {x.shape[1]} new tokens exceed context_length")
        return super().forward(x, cache)
