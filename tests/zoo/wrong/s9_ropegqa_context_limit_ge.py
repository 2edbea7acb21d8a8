"""RopeGroupedQueryAttention's context check written with >= where > belongs: a cache that fills the context
exactly is refused. The probe feeds 6 tokens and then 4 in a context of 10, the exact edge."""
MODULE = "frontier"
LOSES = ["s9.ropegqa.context_limit"]
ONLY = True
MENTIONS = "6 + 4 tokens fill context_length 10 exactly"


class RopeGroupedQueryAttention(RopeGroupedQueryAttention):
    def forward(self, x, cache=None):
        past = 0 if cache is None else cache[0].shape[2]
        if past + x.shape[1] >= self.mask.shape[0]:
            raise ValueError(f"{past} cached + {x.shape[1]} new tokens exceed context_length")
        return super().forward(x, cache)
