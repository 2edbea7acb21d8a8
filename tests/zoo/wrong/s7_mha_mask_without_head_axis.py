"""MultiHeadedAttention passes the (batch, 1, n_k) mask on without unsqueeze(1): against (batch, h, n_q, n_k) scores it broadcasts batch onto the heads (silently, as batch == h here)."""
MODULE = "transformer"
LOSES = ["s7.mha.padding", "s7.mha.oracle"]


class MultiHeadedAttention(MultiHeadedAttention):
    def forward(self, query, key, value, mask=None):
        batch = query.size(0)
        q, k, v = [lin(x).view(batch, -1, self.h, self.d_k).transpose(1, 2)
                   for lin, x in zip(self.linears, (query, key, value))]
        x, _ = scaled_dot_product_attention(q, k, v, mask=mask, dropout=self.dropout)
        return self.linears[-1](x.transpose(1, 2).reshape(batch, -1, self.h * self.d_k))
