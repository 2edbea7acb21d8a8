"""CausalAttention.forward is right but zeroes its input x in place afterwards, so that a grader
reusing x would compare later results on zeros."""
MODULE = "causal"
LOSES = ["s3.causal.shapes", "s3.causal.no_leak", "s3.causal.gradients"]  # backward needs the x it saw
MENTIONS = "modified its input x in place"


class CausalAttention(CausalAttention):
    def forward(self, x):
        out = super().forward(x)
        x.zero_()
        return out
