"""MultiHeadedAttention computes attention inline and scales the scores by 1/sqrt(d_model) instead of 1/sqrt(d_k), the width of one head."""
MODULE = "transformer"
LOSES = ["s7.mha.oracle"]
ONLY = True  # the encoder and decoder layers are judged with the kit's own attention in them


class MultiHeadedAttention(MultiHeadedAttention):
    def forward(self, query, key, value, mask=None):
        batch = query.size(0)
        d_model = self.h * self.d_k
        if mask is not None:
            mask = mask.unsqueeze(1)
        q, k, v = [lin(x).view(batch, -1, self.h, self.d_k).transpose(1, 2)
                   for lin, x in zip(self.linears, (query, key, value))]
        scores = q @ k.transpose(-2, -1) / math.sqrt(d_model)
        if mask is not None:
            scores = scores.masked_fill(mask == 0, -1e9)
        weights = self.dropout(scores.softmax(dim=-1))
        x = (weights @ v).transpose(1, 2).reshape(batch, -1, d_model)
        return self.linears[-1](x)
