"""CausalAttention computes its weights the long way: softmax, multiply by tril, renormalise the rows."""
MODULE = "causal"


class CausalAttention(CausalAttention):
    def forward(self, x):
        n = x.shape[1]
        queries, keys, values = self.W_query(x), self.W_key(x), self.W_value(x)
        weights = torch.softmax(queries @ keys.transpose(1, 2) / keys.shape[-1] ** 0.5, dim=-1)
        weights = weights * (1 - self.mask[:n, :n]).to(weights.dtype)
        weights = weights / weights.sum(dim=-1, keepdim=True)
        return self.dropout(weights) @ values
