"""MultiHeadSelfAttention folds heads into the batch and computes mask + Q K^T / sqrt(head_dim) with one torch.baddbmm, the mask added as a -1e9 bias."""
MODULE = "practical"


class MultiHeadSelfAttention(MultiHeadSelfAttention):
    def forward(self, x, attention_mask=None):
        batch, seq, hidden = x.shape
        h, d = self.num_heads, self.head_dim

        def heads(t):  # (batch * heads, seq, head_dim)
            return t.view(batch, seq, h, d).transpose(1, 2).reshape(batch * h, seq, d)

        queries, keys, values = heads(self.q_proj(x)), heads(self.k_proj(x)), heads(self.v_proj(x))
        bias = torch.zeros(batch, h, seq, seq, dtype=x.dtype, device=x.device)
        if attention_mask is not None:
            bias = bias.masked_fill(attention_mask == 0, -1e9)
        scores = torch.baddbmm(bias.reshape(batch * h, seq, seq), queries, keys.transpose(1, 2), alpha=d ** -0.5)
        weights = self.attention_dropout(scores.softmax(dim=-1))
        context = torch.bmm(weights, values).view(batch, h, seq, d).transpose(1, 2).reshape(batch, seq, hidden)
        return self.o_proj(context)
