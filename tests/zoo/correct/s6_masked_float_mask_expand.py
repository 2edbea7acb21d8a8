"""MaskedSelfAttention turns the mask into float 0/1, expands a (batch, seq) one to (batch, seq, seq) with [:, None, :] and uses F.dropout with training=self.training."""
MODULE = "practical"

import math

import torch.nn.functional as F


class MaskedSelfAttention(MaskedSelfAttention):
    def forward(self, x, attention_mask=None):
        queries, keys, values = self.q(x), self.k(x), self.v(x)
        scores = torch.matmul(queries, keys.transpose(1, 2)) / math.sqrt(self.dim)
        if attention_mask is not None:
            attention_mask = attention_mask.to(x.dtype)
            if attention_mask.dim() == 2:
                attention_mask = attention_mask[:, None, :].expand(-1, x.shape[1], -1)
        weights = masked_softmax(scores, attention_mask)
        weights = F.dropout(weights, self.attention_dropout.p, training=self.training)
        return torch.matmul(weights, values)

