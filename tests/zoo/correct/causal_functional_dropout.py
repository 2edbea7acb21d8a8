"""CausalAttention keeps the dropout probability as a float and calls F.dropout(w, p, training=self.training)."""
MODULE = "causal"

import torch.nn.functional as F


class CausalAttention(CausalAttention):
    def __init__(self, d_in, d_out, context_length, dropout, qkv_bias=False):
        super().__init__(d_in, d_out, context_length, dropout, qkv_bias)
        del self.dropout
        self.dropout_p = dropout

    def forward(self, x):
        n = x.shape[1]
        queries, keys, values = self.W_query(x), self.W_key(x), self.W_value(x)
        scores = (queries @ keys.transpose(1, 2)).masked_fill(self.mask.bool()[:n, :n], -torch.inf)
        weights = torch.softmax(scores / keys.shape[-1] ** 0.5, dim=-1)
        return F.dropout(weights, self.dropout_p, training=self.training) @ values
