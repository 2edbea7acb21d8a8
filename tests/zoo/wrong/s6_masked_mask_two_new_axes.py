"""MaskedSelfAttention gives a (batch, seq) mask two new axes ([:, None, None, :], as multi-head code does) against its 3-D scores, which then broadcast to (batch, batch, seq, seq)."""
MODULE = "practical"
LOSES = ["s6.masked.known_weights", "s6.masked.padding"]
MENTIONS = "shape"


class MaskedSelfAttention(MaskedSelfAttention):
    def forward(self, x, attention_mask=None):
        queries, keys, values = self.q(x), self.k(x), self.v(x)
        scores = queries @ keys.transpose(-2, -1) / self.dim ** 0.5
        if attention_mask is not None and attention_mask.dim() == 2:
            attention_mask = attention_mask[:, None, None, :]
        weights = self.attention_dropout(masked_softmax(scores, attention_mask))
        return weights @ values
