"""GroupedQueryAttention refuses a cache that would fill context_length exactly (>= where > belongs). Only the
exact edge tells them apart: 6 cached + 4 new tokens in a context of 10 must be accepted."""
MODULE = "modern"
LOSES = ["s8.cache.context_limit"]
ONLY = True
MENTIONS = "fill context_length 10 exactly, which is allowed"


class GroupedQueryAttention(GroupedQueryAttention):
    def forward(self, x, cache=None):
        past = 0 if cache is None else cache[0].shape[2]
        if past + x.shape[1] >= self.mask.shape[0]:
            raise ValueError(f"{past} cached + {x.shape[1]} new tokens exceed context_length")
        return super().forward(x, cache)
