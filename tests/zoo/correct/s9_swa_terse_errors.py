"""SlidingWindowAttention whose ValueErrors say little ("too long", "bad window"): no docstring asks for a message
of any length, so terse messages keep full marks (a rule of 10 characters once failed this correct layer)."""
MODULE = "frontier"


class SlidingWindowAttention(SlidingWindowAttention):
    def __init__(self, d_in, d_out, context_length, num_heads, window, dropout=0.0, qkv_bias=False):
        if window < 1 or d_out % num_heads:
            raise ValueError("bad args")
        super().__init__(d_in, d_out, context_length, num_heads, window, dropout, qkv_bias)

    def forward(self, x, cache=None):
        if x.shape[1] > self.context_length:
            raise ValueError("too long")
        return super().forward(x, cache)
