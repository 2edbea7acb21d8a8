"""MultiHeadSelfAttention merges the heads with reshape(batch, seq, hidden) straight from (batch, heads, seq, head_dim), without transposing back: tokens get mixed up."""
MODULE = "practical"
LOSES = ["s6.mhsa.known_weights"]


class MultiHeadSelfAttention(MultiHeadSelfAttention):
    def forward(self, x, attention_mask=None):
        batch, seq, hidden = x.shape

        def heads(t):
            return t.view(batch, seq, self.num_heads, self.head_dim).transpose(1, 2)

        queries, keys, values = heads(self.q_proj(x)), heads(self.k_proj(x)), heads(self.v_proj(x))
        scores = queries @ keys.transpose(-2, -1) / self.head_dim ** 0.5
        weights = self.attention_dropout(masked_softmax(scores, attention_mask))
        return self.o_proj((weights @ values).reshape(batch, seq, hidden))
