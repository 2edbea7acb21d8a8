"""MultiHeadedAttention merges the heads with view(batch, -1, h * d_k) from (batch, h, n_q, d_k), without transposing back."""
MODULE = "transformer"
LOSES = ["s7.mha.oracle"]


class MultiHeadedAttention(MultiHeadedAttention):
    def forward(self, query, key, value, mask=None):
        batch = query.size(0)
        if mask is not None:
            mask = mask.unsqueeze(1)
        q, k, v = [lin(x).view(batch, -1, self.h, self.d_k).transpose(1, 2)
                   for lin, x in zip(self.linears, (query, key, value))]
        x, _ = scaled_dot_product_attention(q, k, v, mask=mask, dropout=self.dropout)
        return self.linears[-1](x.contiguous().view(batch, -1, self.h * self.d_k))
