"""MultiHeadSelfAttention assumes a (batch, seq) padding mask and always indexes it with [:, None, None, :], though the contract hands it masks that already broadcast to (batch, heads, seq, seq)."""
MODULE = "practical"
LOSES = ["s6.mhsa.known_weights", "s6.mhsa.padding"]


class MultiHeadSelfAttention(MultiHeadSelfAttention):
    def forward(self, x, attention_mask=None):
        batch, seq, hidden = x.shape

        def heads(t):
            return t.view(batch, seq, self.num_heads, self.head_dim).transpose(1, 2)

        queries, keys, values = heads(self.q_proj(x)), heads(self.k_proj(x)), heads(self.v_proj(x))
        scores = queries @ keys.transpose(-2, -1) / self.head_dim ** 0.5
        if attention_mask is not None:
            attention_mask = attention_mask[:, None, None, :]
        weights = self.attention_dropout(masked_softmax(scores, attention_mask))
        return self.o_proj((weights @ values).transpose(1, 2).reshape(batch, seq, hidden))
