"""Dropout before the softmax, on the masked scores: a dropped -inf becomes 0, so future tokens get weight."""
MODULE = "causal"
LOSES = ["s3.causal.dropout"]
MENTIONS = "above the diagonal is nonzero"


class CausalAttention(CausalAttention):
    def forward(self, x):
        n = x.shape[1]
        queries, keys, values = self.W_query(x), self.W_key(x), self.W_value(x)
        scores = (queries @ keys.transpose(1, 2)).masked_fill(self.mask.bool()[:n, :n], -torch.inf)
        scores = self.dropout(scores)
        return torch.softmax(scores / keys.shape[-1] ** 0.5, dim=-1) @ values
