"""SlidingWindowAttention refuses a call of exactly context_length tokens (>= where > belongs)."""
MODULE = "frontier"
LOSES = ["s9.swa.errors"]
ONLY = True
MENTIONS = "a call of exactly context_length tokens fits"


class SlidingWindowAttention(SlidingWindowAttention):
    def forward(self, x, cache=None):
        if x.shape[1] >= self.context_length:
            raise ValueError(f"{x.shape[1]} tokens in one call exceed context_length ({self.context_length})")
        return super().forward(x, cache)
