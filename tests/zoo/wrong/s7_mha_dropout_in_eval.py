"""MultiHeadedAttention hands scaled_dot_product_attention a fresh nn.Dropout(p) made in forward, which is always in train mode: attention dropout stays on in eval mode."""
MODULE = "transformer"
LOSES = ["s7.encoder.eval", "s7.decoder.eval"]
MENTIONS = "dropout must be off in eval mode"
ONLY = True


class MultiHeadedAttention(MultiHeadedAttention):
    def forward(self, query, key, value, mask=None):
        batch = query.size(0)
        if mask is not None:
            mask = mask.unsqueeze(1)
        q, k, v = [lin(x).view(batch, -1, self.h, self.d_k).transpose(1, 2)
                   for lin, x in zip(self.linears, (query, key, value))]
        x, _ = scaled_dot_product_attention(q, k, v, mask=mask, dropout=nn.Dropout(self.dropout.p))
        return self.linears[-1](x.transpose(1, 2).reshape(batch, -1, self.h * self.d_k))
