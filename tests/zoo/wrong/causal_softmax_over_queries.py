"""CausalAttention takes the softmax over dim=1 (the query axis of a batch) instead of the last dim."""
MODULE = "causal"
LOSES = ["s3.causal.known_weights", "s3.causal.no_leak"]


class CausalAttention(CausalAttention):
    def forward(self, x):
        n = x.shape[1]
        queries, keys, values = self.W_query(x), self.W_key(x), self.W_value(x)
        scores = (queries @ keys.transpose(1, 2)).masked_fill(self.mask.bool()[:n, :n], -torch.inf)
        return self.dropout(torch.softmax(scores / keys.shape[-1] ** 0.5, dim=1)) @ values
