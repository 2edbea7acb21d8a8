"""MultiHeadSelfAttention scales by head_dim * 0.5 instead of head_dim ** 0.5: equal for heads of 4, the width of
every other case, so only the 3 heads of 6 catch it."""
MODULE = "practical"
LOSES = ["s6.mhsa.known_weights"]
ONLY = True
MENTIONS = "3 heads of 6 dimensions"


class MultiHeadSelfAttention(MultiHeadSelfAttention):
    def forward(self, x, attention_mask=None):
        batch, seq, hidden = x.shape

        def heads(t):
            return t.view(batch, seq, self.num_heads, self.head_dim).transpose(1, 2)

        queries, keys, values = heads(self.q_proj(x)), heads(self.k_proj(x)), heads(self.v_proj(x))
        scores = queries @ keys.transpose(-2, -1) / (self.head_dim * 0.5)
        weights = self.attention_dropout(masked_softmax(scores, attention_mask))
        return self.o_proj((weights @ values).transpose(1, 2).reshape(batch, seq, hidden))
