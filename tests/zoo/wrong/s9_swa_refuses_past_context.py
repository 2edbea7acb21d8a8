"""SlidingWindowAttention counts every token decoded since cache=None and refuses to go past context_length,
though the contract lets decoding with a cache go on past it (context_length bounds one call)."""
MODULE = "frontier"
LOSES = ["s9.swa.rolling"]
ONLY = True
MENTIONS = "refused to decode 10 tokens"


class SlidingWindowAttention(SlidingWindowAttention):
    def forward(self, x, cache=None):
        self.decoded = x.shape[1] + (0 if cache is None else getattr(self, "decoded", 0))
        if self.decoded > self.context_length:
            raise ValueError(f"{self.decoded} tokens exceed context_length ({self.context_length})")
        return super().forward(x, cache)
