"""CausalAttention built on F.scaled_dot_product_attention with the mask buffer as attn_mask (True = may attend)."""
MODULE = "causal"

import torch.nn.functional as F


class CausalAttention(CausalAttention):
    def forward(self, x):
        n = x.shape[1]
        queries, keys, values = self.W_query(x), self.W_key(x), self.W_value(x)
        allowed = self.mask[:n, :n] == 0
        p = self.dropout.p if self.training else 0.0
        return F.scaled_dot_product_attention(queries, keys, values, attn_mask=allowed, dropout_p=p)
