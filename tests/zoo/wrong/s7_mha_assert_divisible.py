"""MultiHeadedAttention checks d_model % h with assert instead of raising ValueError."""
MODULE = "transformer"
LOSES = ["s7.mha.divisibility"]
MENTIONS = "AssertionError"
ONLY = True


class MultiHeadedAttention(MultiHeadedAttention):
    def __init__(self, h, d_model, dropout=0.1):
        assert d_model % h == 0
        super().__init__(h, d_model, dropout)
