"""MultiHeadAttention builds out_proj with bias=qkv_bias, so it has no bias by default. Priced where the bias is
the concept: the structure check, the parameter count the book prints, and the book's seeded numbers (a missing
parameter changes what torch.manual_seed(123) gives every later one); the checks that load known weights give
out_proj the bias it lacks and judge their own concept."""
MODULE = "multihead"
LOSES = ["s4.mha.structure", "s4.param_count", "s4.mha.seeded"]
ONLY = True
MENTIONS = "out_proj should have a bias"


class MultiHeadAttention(MultiHeadAttention):
    def __init__(self, d_in, d_out, context_length, dropout, num_heads, qkv_bias=False):
        super().__init__(d_in, d_out, context_length, dropout, num_heads, qkv_bias)
        self.out_proj = nn.Linear(d_out, d_out, bias=qkv_bias)
