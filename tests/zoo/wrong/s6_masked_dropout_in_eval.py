"""MaskedSelfAttention calls F.dropout(weights, p) without training=self.training: dropout stays on in eval mode."""
MODULE = "practical"
LOSES = ["s6.masked.eval"]
MENTIONS = "dropout must be off in eval mode"
ONLY = True

import torch.nn.functional as F


class MaskedSelfAttention(MaskedSelfAttention):
    def forward(self, x, attention_mask=None):
        queries, keys, values = self.q(x), self.k(x), self.v(x)
        scores = queries @ keys.transpose(-2, -1) / self.dim ** 0.5
        if attention_mask is not None and attention_mask.dim() == 2:
            attention_mask = attention_mask.unsqueeze(1)
        weights = F.dropout(masked_softmax(scores, attention_mask), self.attention_dropout.p)
        return weights @ values
