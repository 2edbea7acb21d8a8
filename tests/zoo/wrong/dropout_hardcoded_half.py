"""CausalAttention hard-codes nn.Dropout(0.5) from the book's example instead of using the dropout argument."""
MODULE = "causal"
LOSES = ["s3.causal.dropout", "s3.causal.seeded"]
MENTIONS = "scaled by 2.0000"


class CausalAttention(CausalAttention):
    def __init__(self, d_in, d_out, context_length, dropout, qkv_bias=False):
        super().__init__(d_in, d_out, context_length, dropout, qkv_bias)
        self.dropout = nn.Dropout(0.5)
