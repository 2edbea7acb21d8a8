"""MultiHeadedAttention splits heads with view(batch, h, -1, d_k), without the transpose: heads get slices of several positions."""
MODULE = "transformer"
LOSES = ["s7.mha.oracle"]


class MultiHeadedAttention(MultiHeadedAttention):
    def forward(self, query, key, value, mask=None):
        batch = query.size(0)
        if mask is not None:
            mask = mask.unsqueeze(1)
        q, k, v = [lin(x).view(batch, self.h, -1, self.d_k) for lin, x in zip(self.linears, (query, key, value))]
        x, _ = scaled_dot_product_attention(q, k, v, mask=mask, dropout=self.dropout)
        return self.linears[-1](x.transpose(1, 2).reshape(batch, -1, self.h * self.d_k))
