"""Dropout applied to the context vectors (the output) instead of the attention weights."""
MODULE = "causal"
LOSES = ["s3.causal.dropout"]
MENTIONS = "act on the output of attention"


class CausalAttention(CausalAttention):
    def forward(self, x):
        n = x.shape[1]
        queries, keys, values = self.W_query(x), self.W_key(x), self.W_value(x)
        scores = (queries @ keys.transpose(1, 2)).masked_fill(self.mask.bool()[:n, :n], -torch.inf)
        return self.dropout(torch.softmax(scores / keys.shape[-1] ** 0.5, dim=-1) @ values)
