"""SlidingWindowAttention whose window of 1 returns (None, None) for the cache, each of the two None: the docstring
allows None in place of the cache or of each of keys and values (an independent review read "(or None)" this way,
and s9.swa.cache failed it 0/3). With nothing kept, the next call is given None, a new sequence."""
MODULE = "frontier"


class SlidingWindowAttention(SlidingWindowAttention):
    def forward(self, x, cache=None):
        out, kept = super().forward(x, cache)
        if self.window == 1:
            return out, (None, None)
        return out, kept
