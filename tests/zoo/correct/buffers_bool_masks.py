"""Both buffer classes with a bool mask (the plain one a bool attribute, the other a bool buffer) and -1e9 fill."""
MODULE = "buffers"


class CausalAttentionWithoutBuffers(CausalAttentionWithoutBuffers):
    def __init__(self, d_in, d_out, context_length, dropout, qkv_bias=False):
        super().__init__(d_in, d_out, context_length, dropout, qkv_bias)
        self.mask = torch.ones(context_length, context_length, dtype=torch.bool).triu(1)

    def forward(self, x):
        n = x.shape[1]
        queries, keys, values = self.W_query(x), self.W_key(x), self.W_value(x)
        scores = (queries @ keys.transpose(1, 2)).masked_fill(self.mask[:n, :n], -1e9)
        return self.dropout(torch.softmax(scores / keys.shape[-1] ** 0.5, dim=-1)) @ values


class CausalAttentionWithBuffer(CausalAttentionWithBuffer):
    def __init__(self, d_in, d_out, context_length, dropout, qkv_bias=False):
        super().__init__(d_in, d_out, context_length, dropout, qkv_bias)
        self.register_buffer("mask", torch.ones(context_length, context_length, dtype=torch.bool).triu(1))
