"""MultiHeadAttention calls F.dropout(w, p) without training=self.training, so eval mode still drops weights."""
MODULE = "multihead"
LOSES = ["s4.mha.eval"]
MENTIONS = "two calls in eval mode gave different outputs"

import torch.nn.functional as F


class MultiHeadAttention(MultiHeadAttention):
    def forward(self, x):
        b, n, _ = x.shape
        split = lambda t: t.view(b, n, self.num_heads, self.head_dim).transpose(1, 2)
        queries, keys, values = split(self.W_query(x)), split(self.W_key(x)), split(self.W_value(x))
        scores = (queries @ keys.transpose(2, 3)).masked_fill(self.mask.bool()[:n, :n], -torch.inf)
        weights = F.dropout(torch.softmax(scores / self.head_dim ** 0.5, dim=-1), self.dropout.p)
        return self.out_proj((weights @ values).transpose(1, 2).contiguous().view(b, n, self.d_out))
