"""MultiHeadSelfAttention splits the heads with view(batch, num_heads, seq, head_dim) directly, without the transpose: each "head" gets slices of several tokens."""
MODULE = "practical"
LOSES = ["s6.mhsa.known_weights"]


class MultiHeadSelfAttention(MultiHeadSelfAttention):
    def forward(self, x, attention_mask=None):
        batch, seq, hidden = x.shape

        def heads(t):
            return t.view(batch, self.num_heads, seq, self.head_dim)

        queries, keys, values = heads(self.q_proj(x)), heads(self.k_proj(x)), heads(self.v_proj(x))
        scores = queries @ keys.transpose(-2, -1) / self.head_dim ** 0.5
        weights = self.attention_dropout(masked_softmax(scores, attention_mask))
        return self.o_proj((weights @ values).transpose(1, 2).reshape(batch, seq, hidden))
