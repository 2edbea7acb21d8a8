"""SlidingWindowAttention.forward returns the output alone, as stage 4's layer does, and no cache: the feedback names this layer, not stage 8's."""
MODULE = "frontier"
LOSES = ["s9.swa.band", "s9.swa.as_mha", "s9.swa.cache", "s9.swa.rolling", "s9.swa.shapes", "s9.swa.dropout",
         "s9.swa.eval", "s9.gradients"]
MENTIONS = "SlidingWindowAttention.forward should return a pair"


class SlidingWindowAttention(SlidingWindowAttention):
    def forward(self, x, cache=None):
        return super().forward(x, cache)[0]
