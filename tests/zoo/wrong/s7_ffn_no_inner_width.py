"""PositionwiseFeedForward ignores d_ff: w_1 = nn.Linear(d_model, d_model) and w_2 = nn.Linear(d_model, d_model)."""
MODULE = "transformer"
LOSES = ["s7.ffn.structure", "s7.ffn.known_weights"]
MENTIONS = "d_ff wide"


class PositionwiseFeedForward(PositionwiseFeedForward):
    def __init__(self, d_model, d_ff, dropout=0.1):
        super().__init__(d_model, d_ff, dropout)
        self.w_1 = nn.Linear(d_model, d_model)
        self.w_2 = nn.Linear(d_model, d_model)
