"""MultiHeadAttention merges the heads with reshape instead of contiguous().view and splits with unflatten."""
MODULE = "multihead"


class MultiHeadAttention(MultiHeadAttention):
    def forward(self, x):
        b, n, _ = x.shape
        split = lambda t: t.unflatten(-1, (self.num_heads, self.head_dim)).transpose(1, 2)
        queries, keys, values = split(self.W_query(x)), split(self.W_key(x)), split(self.W_value(x))
        scores = (queries @ keys.transpose(-2, -1)).masked_fill(self.mask.bool()[:n, :n], -torch.inf)
        weights = self.dropout(torch.softmax(scores / self.head_dim ** 0.5, dim=-1))
        return self.out_proj((weights @ values).transpose(1, 2).reshape(b, n, self.d_out))
