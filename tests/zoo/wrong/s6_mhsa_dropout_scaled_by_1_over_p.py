"""MultiHeadSelfAttention drops attention weights by hand and rescales the kept ones by 1/p instead of 1/(1-p)."""
MODULE = "practical"
LOSES = ["s6.mhsa.dropout"]
MENTIONS = "1/p"
ONLY = True


class MultiHeadSelfAttention(MultiHeadSelfAttention):
    def forward(self, x, attention_mask=None):
        batch, seq, hidden = x.shape

        def heads(t):
            return t.view(batch, seq, self.num_heads, self.head_dim).transpose(1, 2)

        queries, keys, values = heads(self.q_proj(x)), heads(self.k_proj(x)), heads(self.v_proj(x))
        scores = queries @ keys.transpose(-2, -1) / self.head_dim ** 0.5
        weights = masked_softmax(scores, attention_mask)
        p = self.attention_dropout.p
        if self.training and p > 0:
            keep = (torch.rand_like(weights) >= p).to(weights.dtype)
            weights = weights * keep / p
        return self.o_proj((weights @ values).transpose(1, 2).reshape(batch, seq, hidden))
