"""CausalAttention builds its mask inside forward with torch.ones(n, n) (on the CPU) instead of using the buffer."""
MODULE = "causal"
LOSES = ["s3.causal.device"]
MENTIONS = "used a tensor that is not on meta (aten.masked_fill with a tensor on cpu)"


class CausalAttention(CausalAttention):
    def forward(self, x):
        n = x.shape[1]
        queries, keys, values = self.W_query(x), self.W_key(x), self.W_value(x)
        mask = torch.triu(torch.ones(n, n), diagonal=1).bool()
        scores = (queries @ keys.transpose(1, 2)).masked_fill(mask, -torch.inf)
        return self.dropout(torch.softmax(scores / keys.shape[-1] ** 0.5, dim=-1)) @ values
