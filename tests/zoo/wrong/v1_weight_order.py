"""SelfAttention_v1 creates its weights in the order key, query, value, so the seeded example draws different numbers."""
MODULE = "self_attention"
LOSES = ["s2.v1.seeded"]
MENTIONS = "manual_seed(123)"


class SelfAttention_v1(SelfAttention_v1):
    def __init__(self, d_in, d_out):
        nn.Module.__init__(self)
        self.W_key = nn.Parameter(torch.rand(d_in, d_out))
        self.W_query = nn.Parameter(torch.rand(d_in, d_out))
        self.W_value = nn.Parameter(torch.rand(d_in, d_out))
