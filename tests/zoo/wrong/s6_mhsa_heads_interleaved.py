"""MultiHeadSelfAttention splits with view(batch, seq, head_dim, num_heads) and takes the last axis as the heads: each head gets every num_heads-th feature instead of a contiguous block."""
MODULE = "practical"
LOSES = ["s6.mhsa.known_weights"]
ONLY = True


class MultiHeadSelfAttention(MultiHeadSelfAttention):
    def forward(self, x, attention_mask=None):
        batch, seq, hidden = x.shape

        def heads(t):
            return t.view(batch, seq, self.head_dim, self.num_heads).permute(0, 3, 1, 2)

        queries, keys, values = heads(self.q_proj(x)), heads(self.k_proj(x)), heads(self.v_proj(x))
        scores = queries @ keys.transpose(-2, -1) / self.head_dim ** 0.5
        weights = self.attention_dropout(masked_softmax(scores, attention_mask))
        return self.o_proj((weights @ values).transpose(1, 2).reshape(batch, seq, hidden))
