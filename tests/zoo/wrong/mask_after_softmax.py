"""CausalAttention masks after the softmax (future weights set to 0) without renormalising: rows sum to < 1 and the denominators still see the future."""
MODULE = "causal"
LOSES = ["s3.causal.known_weights", "s3.causal.no_leak"]


class CausalAttention(CausalAttention):
    def forward(self, x):
        n = x.shape[1]
        queries, keys, values = self.W_query(x), self.W_key(x), self.W_value(x)
        weights = torch.softmax(queries @ keys.transpose(1, 2) / keys.shape[-1] ** 0.5, dim=-1)
        weights = weights.masked_fill(self.mask.bool()[:n, :n], 0.0)
        return self.dropout(weights) @ values
