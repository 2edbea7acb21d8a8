"""MultiHeadSelfAttention checks divisibility with assert instead of raising ValueError."""
MODULE = "practical"
LOSES = ["s6.mhsa.divisibility"]
MENTIONS = "AssertionError"
ONLY = True


class MultiHeadSelfAttention(MultiHeadSelfAttention):
    def __init__(self, hidden_dim, num_heads, dropout=0.1):
        assert hidden_dim % num_heads == 0, "hidden_dim must be divisible by num_heads"
        super().__init__(hidden_dim, num_heads, dropout)
