"""MultiHeadedAttention projects the query input three times (keys and values from the query), so cross-attention never looks at memory."""
MODULE = "transformer"
LOSES = ["s7.mha.cross", "s7.mha.oracle"]
MENTIONS = "keys and values"


class MultiHeadedAttention(MultiHeadedAttention):
    def forward(self, query, key, value, mask=None):
        batch = query.size(0)
        if mask is not None:
            mask = mask.unsqueeze(1)
        q, k, v = [lin(query).view(batch, -1, self.h, self.d_k).transpose(1, 2) for lin in self.linears[:3]]
        x, _ = scaled_dot_product_attention(q, k, v, mask=mask, dropout=self.dropout)
        return self.linears[-1](x.transpose(1, 2).reshape(batch, -1, self.h * self.d_k))
