"""MultiHeadSelfAttention builds o_proj with bias=False (as some GPT code does), though the contract asks for a bias.
Priced once, in the structure check (it cost 6 checks and 11 points before)."""
MODULE = "practical"
LOSES = ["s6.mhsa.structure"]
ONLY = True
MENTIONS = "o_proj should have a bias"


class MultiHeadSelfAttention(MultiHeadSelfAttention):
    def __init__(self, hidden_dim, num_heads, dropout=0.1):
        super().__init__(hidden_dim, num_heads, dropout)
        self.o_proj = nn.Linear(hidden_dim, hidden_dim, bias=False)
