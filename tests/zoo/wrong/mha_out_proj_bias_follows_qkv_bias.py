"""MultiHeadAttention builds out_proj with bias=qkv_bias, so it has no bias by default."""
MODULE = "multihead"
LOSES = ["s4.mha.structure", "s4.mha.known_weights"]
MENTIONS = "out_proj should have a bias"


class MultiHeadAttention(MultiHeadAttention):
    def __init__(self, d_in, d_out, context_length, dropout, num_heads, qkv_bias=False):
        super().__init__(d_in, d_out, context_length, dropout, num_heads, qkv_bias)
        self.out_proj = nn.Linear(d_out, d_out, bias=qkv_bias)
