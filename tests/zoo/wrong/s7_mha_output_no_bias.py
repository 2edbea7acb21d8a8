"""MultiHeadedAttention builds its output projection linears[3] with bias=False, though all four layers have a
bias. Priced once, in s7.mha.structure: the encoder, decoder and attention checks that load known weights give
linears[3] its bias (11 checks and 22 points were lost before)."""
MODULE = "transformer"
LOSES = ["s7.mha.structure"]
ONLY = True
MENTIONS = "linears.3.bias"


class MultiHeadedAttention(MultiHeadedAttention):
    def __init__(self, h, d_model, dropout=0.1):
        super().__init__(h, d_model, dropout)
        self.linears[3] = nn.Linear(d_model, d_model, bias=False)
