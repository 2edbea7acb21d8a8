"""MultiHeadSelfAttention divides the scores by head_dim ** 2 instead of head_dim ** 0.5 (the seed notes' `k_dim ** 2`)."""
MODULE = "practical"
LOSES = ["s6.mhsa.known_weights"]
ONLY = True


class MultiHeadSelfAttention(MultiHeadSelfAttention):
    def forward(self, x, attention_mask=None):
        batch, seq, hidden = x.shape

        def heads(t):
            return t.view(batch, seq, self.num_heads, self.head_dim).transpose(1, 2)

        queries, keys, values = heads(self.q_proj(x)), heads(self.k_proj(x)), heads(self.v_proj(x))
        k_dim = keys.shape[-1]
        scores = queries @ keys.transpose(-2, -1) / k_dim ** 2
        weights = self.attention_dropout(masked_softmax(scores, attention_mask))
        return self.o_proj((weights @ values).transpose(1, 2).reshape(batch, seq, hidden))
