"""MultiHeadedAttention builds its output projection linears[3] with bias=False, though all four layers have a bias."""
MODULE = "transformer"
LOSES = ["s7.mha.oracle"]
MENTIONS = "linears.3.bias"


class MultiHeadedAttention(MultiHeadedAttention):
    def __init__(self, h, d_model, dropout=0.1):
        super().__init__(h, d_model, dropout)
        self.linears[3] = nn.Linear(d_model, d_model, bias=False)
