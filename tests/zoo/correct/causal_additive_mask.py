"""CausalAttention with an additive mask buffer (0 on and below the diagonal, -inf above) added to the scores."""
MODULE = "causal"


class CausalAttention(CausalAttention):
    def __init__(self, d_in, d_out, context_length, dropout, qkv_bias=False):
        super().__init__(d_in, d_out, context_length, dropout, qkv_bias)
        future = torch.triu(torch.ones(context_length, context_length, dtype=torch.bool), diagonal=1)
        self.register_buffer("mask", torch.zeros(context_length, context_length).masked_fill(future, -torch.inf))

    def forward(self, x):
        n = x.shape[1]
        queries, keys, values = self.W_query(x), self.W_key(x), self.W_value(x)
        scores = queries @ keys.transpose(1, 2) / keys.shape[-1] ** 0.5 + self.mask[:n, :n]
        return self.dropout(torch.softmax(scores, dim=-1)) @ values
