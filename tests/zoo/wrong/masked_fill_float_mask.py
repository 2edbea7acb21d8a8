"""CausalAttention passes the float 0/1 mask straight to masked_fill, which needs a bool mask (.bool() forgotten)."""
MODULE = "causal"
LOSES = ["s3.causal.seeded", "s3.causal.known_weights"]
MENTIONS = "boolean"


class CausalAttention(CausalAttention):
    def forward(self, x):
        n = x.shape[1]
        queries, keys, values = self.W_query(x), self.W_key(x), self.W_value(x)
        scores = (queries @ keys.transpose(1, 2)).masked_fill(self.mask[:n, :n], -torch.inf)
        return self.dropout(torch.softmax(scores / keys.shape[-1] ** 0.5, dim=-1)) @ values
