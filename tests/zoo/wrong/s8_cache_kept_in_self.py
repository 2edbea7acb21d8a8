"""GroupedQueryAttention keeps its cache in self and falls back on it when cache is None, so cache=None never starts a new sequence."""
MODULE = "modern"
LOSES = ["s8.cache.reset", "s8.gqa.no_leak", "s8.gqa.eval"]
MENTIONS = "is a cache appended twice, or kept in the module itself"
ONLY = True


class GroupedQueryAttention(GroupedQueryAttention):
    def forward(self, x, cache=None):
        if cache is None:
            cache = getattr(self, "kv_cache", None)
        out, self.kv_cache = super().forward(x, cache)
        return out, self.kv_cache
