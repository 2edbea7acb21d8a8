"""MaskedSelfAttention applies its dropout to the scores before the softmax (as the seed's SelfAttentionThree does), not to the attention weights."""
MODULE = "practical"
LOSES = ["s6.masked.dropout"]
MENTIONS = "no attention weight was zeroed"
ONLY = True


class MaskedSelfAttention(MaskedSelfAttention):
    def forward(self, x, attention_mask=None):
        queries, keys, values = self.q(x), self.k(x), self.v(x)
        scores = self.attention_dropout(queries @ keys.transpose(-2, -1) / self.dim ** 0.5)
        if attention_mask is not None and attention_mask.dim() == 2:
            attention_mask = attention_mask.unsqueeze(1)
        return masked_softmax(scores, attention_mask) @ values
