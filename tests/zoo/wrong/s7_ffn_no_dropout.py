"""PositionwiseFeedForward forgets its dropout: w_2(relu(w_1(x))) in train mode too, though the contract is w_2(dropout(relu(w_1(x))))."""
MODULE = "transformer"
LOSES = ["s7.ffn.dropout"]
MENTIONS = "zeroed nothing"
ONLY = True


class PositionwiseFeedForward(PositionwiseFeedForward):
    def forward(self, x):
        return self.w_2(self.w_1(x).relu())
