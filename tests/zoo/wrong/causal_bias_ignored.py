"""CausalAttention ignores qkv_bias: its projections never get a bias."""
MODULE = "causal"
LOSES = ["s3.causal.known_weights"]
MENTIONS = "has no parameter named 'W_query.bias'"


class CausalAttention(CausalAttention):
    def __init__(self, d_in, d_out, context_length, dropout, qkv_bias=False):
        super().__init__(d_in, d_out, context_length, dropout)
