"""MultiHeadAttention divides the scores by k_dim ** 2 instead of k_dim ** 0.5 (the seed notes' bug); with head_dim 1 the book example cannot tell."""
MODULE = "multihead"
LOSES = ["s4.mha.known_weights"]


class MultiHeadAttention(MultiHeadAttention):
    def forward(self, x):
        b, n, _ = x.shape
        split = lambda t: t.view(b, n, self.num_heads, self.head_dim).transpose(1, 2)
        queries, keys, values = split(self.W_query(x)), split(self.W_key(x)), split(self.W_value(x))
        scores = (queries @ keys.transpose(2, 3)).masked_fill(self.mask.bool()[:n, :n], -torch.inf)
        k_dim = keys.shape[-1]
        weights = self.dropout(torch.softmax(scores / k_dim ** 2, dim=-1))
        return self.out_proj((weights @ values).transpose(1, 2).contiguous().view(b, n, self.d_out))
