"""PositionwiseFeedForward forgets the ReLU: w_2(dropout(w_1(x))) is one linear map."""
MODULE = "transformer"
LOSES = ["s7.ffn.known_weights"]
ONLY = True  # the layers are judged with the kit's own feed-forward network in them


class PositionwiseFeedForward(PositionwiseFeedForward):
    def forward(self, x):
        return self.w_2(self.dropout(self.w_1(x)))
