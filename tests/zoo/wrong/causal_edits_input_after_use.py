"""CausalAttention computes the right output, then doubles its input in place (x *= 2).

It loses the input-untouched contract, the checks that differentiate through x (autograd needs the
unmodified x) and the wrapper's checks (the wrapper hands the same x to every head), but nothing
else: probes give every call its own copy, so MultiHeadAttention, eval mode and the state_dict
are judged on clean inputs."""
MODULE = "causal"
LOSES = ["s3.causal.shapes", "s3.causal.no_leak", "s3.causal.gradients",
         "s4.wrapper.seeded", "s4.wrapper.known_weights", "s4.wrapper.shapes"]
MENTIONS = "modified its input"
ONLY = True


class CausalAttention(CausalAttention):
    def forward(self, x):
        out = super().forward(x)
        with torch.no_grad():
            x *= 2
        return out
