"""SelfAttention_v2 ignores qkv_bias: its nn.Linear layers never have a bias."""
MODULE = "self_attention"
LOSES = ["s2.v2.known_weights"]
MENTIONS = "W_query.bias"


class SelfAttention_v2(SelfAttention_v2):
    def __init__(self, d_in, d_out, qkv_bias=False):
        nn.Module.__init__(self)
        self.W_query = nn.Linear(d_in, d_out, bias=False)
        self.W_key = nn.Linear(d_in, d_out, bias=False)
        self.W_value = nn.Linear(d_in, d_out, bias=False)
