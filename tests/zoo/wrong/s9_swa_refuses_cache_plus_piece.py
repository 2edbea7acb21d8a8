"""SlidingWindowAttention refuses a piece when the tokens cached and the piece together pass
context_length, though the piece alone fits: context_length bounds the tokens of one call."""
MODULE = "frontier"
LOSES = ["s9.swa.rolling"]
ONLY = True
MENTIONS = "refused to decode 10 tokens in two pieces of 5"


class SlidingWindowAttention(SlidingWindowAttention):
    def forward(self, x, cache=None):
        kept = 0 if cache is None else cache[0].shape[2]
        if kept + x.shape[1] > self.context_length:
            raise ValueError(f"{kept} cached + {x.shape[1]} new tokens exceed context_length ({self.context_length})")
        return super().forward(x, cache)
