"""MaskedSelfAttention gives the (batch, seq) mask its new axis at the end (unsqueeze(-1)): it hides padded queries instead of padded keys, so real tokens still attend to padding."""
MODULE = "practical"
LOSES = ["s6.masked.mask_forms", "s6.masked.padding", "s6.masked.known_weights"]
MENTIONS = "mask[:, None, :]"


class MaskedSelfAttention(MaskedSelfAttention):
    def forward(self, x, attention_mask=None):
        queries, keys, values = self.q(x), self.k(x), self.v(x)
        scores = queries @ keys.transpose(-2, -1) / self.dim ** 0.5
        if attention_mask is not None and attention_mask.dim() == 2:
            attention_mask = attention_mask.unsqueeze(-1)
        weights = self.attention_dropout(masked_softmax(scores, attention_mask))
        return weights @ values
