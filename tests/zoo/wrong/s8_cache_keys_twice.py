"""GroupedQueryAttention returns the cache as (keys, keys): the next call uses the cached keys as values."""
MODULE = "modern"
LOSES = ["s8.cache.heads", "s8.cache.incremental", "s8.cache.pieces", "s8.cache.reset"]
MENTIONS = "the cache's values after the whole sequence"
ONLY = True


class GroupedQueryAttention(GroupedQueryAttention):
    def forward(self, x, cache=None):
        out, (keys, values) = super().forward(x, cache)
        return out, (keys, keys)
