"""CausalAttention.forward computes once and returns the same cached tensor on every later call,
whatever the input."""
MODULE = "causal"
LOSES = ["s3.causal.known_weights", "s3.causal.shapes", "s3.causal.no_leak", "s3.causal.dropout",
         "s3.causal.eval", "s3.causal.device", "s3.causal.gradients", "s3.causal.state_dict"]
MENTIONS = "CausalAttention"

_cache = {}


class CausalAttention(CausalAttention):
    def forward(self, x):
        if "out" not in _cache:
            _cache["out"] = super().forward(x)
        return _cache["out"]
