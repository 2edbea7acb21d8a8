"""MultiHeadAttention checks d_out % num_heads with assert instead of raising ValueError."""
MODULE = "multihead"
LOSES = ["s4.mha.divisibility"]
MENTIONS = "raised AssertionError"


class MultiHeadAttention(MultiHeadAttention):
    def __init__(self, d_in, d_out, context_length, dropout, num_heads, qkv_bias=False):
        assert d_out % num_heads == 0, "d_out must be divisible by num_heads"
        super().__init__(d_in, d_out, context_length, dropout, num_heads, qkv_bias)
