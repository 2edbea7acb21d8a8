"""MaskedSelfAttention multiplies by the nn.Linear module (x @ self.q) instead of calling it."""
MODULE = "practical"
LOSES = ["s6.masked.known_weights", "s6.masked.padding", "s6.gradients"]
MENTIONS = "TypeError"


class MaskedSelfAttention(MaskedSelfAttention):
    def forward(self, x, attention_mask=None):
        queries, keys, values = x @ self.q, self.k(x), self.v(x)
        scores = queries @ keys.transpose(-2, -1) / self.dim ** 0.5
        if attention_mask is not None and attention_mask.dim() == 2:
            attention_mask = attention_mask.unsqueeze(1)
        weights = self.attention_dropout(masked_softmax(scores, attention_mask))
        return weights @ values
