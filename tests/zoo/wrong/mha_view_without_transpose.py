"""MultiHeadAttention splits the heads with view(b, num_tokens, num_heads, head_dim) but never transposes to (b, num_heads, num_tokens, head_dim)."""
MODULE = "multihead"
LOSES = ["s4.mha.seeded", "s4.mha.known_weights", "s4.mha.shapes"]


class MultiHeadAttention(MultiHeadAttention):
    def forward(self, x):
        b, n, _ = x.shape
        queries = self.W_query(x).view(b, n, self.num_heads, self.head_dim)
        keys = self.W_key(x).view(b, n, self.num_heads, self.head_dim)
        values = self.W_value(x).view(b, n, self.num_heads, self.head_dim)
        scores = (queries @ keys.transpose(2, 3)).masked_fill(self.mask.bool()[:n, :n], -torch.inf)
        weights = self.dropout(torch.softmax(scores / self.head_dim ** 0.5, dim=-1))
        return self.out_proj((weights @ values).contiguous().view(b, n, self.d_out))
