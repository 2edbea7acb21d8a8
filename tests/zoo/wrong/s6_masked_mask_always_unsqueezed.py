"""MaskedSelfAttention unsqueezes every mask (unsqueeze(1)), also a (batch, seq, seq) one, which then broadcasts the scores to (batch, batch, seq, seq)."""
MODULE = "practical"
LOSES = ["s6.masked.known_weights"]
MENTIONS = "shape"


class MaskedSelfAttention(MaskedSelfAttention):
    def forward(self, x, attention_mask=None):
        queries, keys, values = self.q(x), self.k(x), self.v(x)
        scores = queries @ keys.transpose(-2, -1) / self.dim ** 0.5
        if attention_mask is not None:
            attention_mask = attention_mask.unsqueeze(1)
        weights = self.attention_dropout(masked_softmax(scores, attention_mask))
        return weights @ values
