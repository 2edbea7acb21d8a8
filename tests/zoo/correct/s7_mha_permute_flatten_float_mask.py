"""MultiHeadedAttention with reshape for the heads, the mask as float 0/1 with a head axis from [:, None], and the heads merged with flatten(2)."""
MODULE = "transformer"


class MultiHeadedAttention(MultiHeadedAttention):
    def forward(self, query, key, value, mask=None):
        batch = query.size(0)
        if mask is not None:
            mask = mask[:, None].float()
        q, k, v = [lin(x).reshape(batch, x.size(1), self.h, self.d_k).permute(0, 2, 1, 3)
                   for lin, x in zip(self.linears, (query, key, value))]
        x, _ = scaled_dot_product_attention(q, k, v, mask, self.dropout)
        return self.linears[3](x.permute(0, 2, 1, 3).flatten(2))
