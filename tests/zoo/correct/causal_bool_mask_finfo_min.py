"""CausalAttention with a bool mask buffer and torch.finfo(dtype).min as the fill value."""
MODULE = "causal"


class CausalAttention(CausalAttention):
    def __init__(self, d_in, d_out, context_length, dropout, qkv_bias=False):
        super().__init__(d_in, d_out, context_length, dropout, qkv_bias)
        self.register_buffer(
            "mask", torch.triu(torch.ones(context_length, context_length, dtype=torch.bool), diagonal=1))

    def forward(self, x):
        n = x.shape[1]
        queries, keys, values = self.W_query(x), self.W_key(x), self.W_value(x)
        scores = (queries @ keys.transpose(-2, -1)) / keys.shape[-1] ** 0.5
        scores = scores.masked_fill(self.mask[:n, :n], torch.finfo(scores.dtype).min)
        return self.dropout(torch.softmax(scores, dim=-1)) @ values
