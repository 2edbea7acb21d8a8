"""MultiHeadSelfAttention scales the scores by 1/sqrt(hidden_dim) instead of 1/sqrt(head_dim): the width of the whole layer, not of one head."""
MODULE = "practical"
LOSES = ["s6.mhsa.known_weights"]
ONLY = True


class MultiHeadSelfAttention(MultiHeadSelfAttention):
    def forward(self, x, attention_mask=None):
        batch, seq, hidden = x.shape

        def heads(t):
            return t.view(batch, seq, self.num_heads, self.head_dim).transpose(1, 2)

        queries, keys, values = heads(self.q_proj(x)), heads(self.k_proj(x)), heads(self.v_proj(x))
        scores = queries @ keys.transpose(-2, -1) / hidden ** 0.5
        weights = self.attention_dropout(masked_softmax(scores, attention_mask))
        return self.o_proj((weights @ values).transpose(1, 2).reshape(batch, seq, hidden))
