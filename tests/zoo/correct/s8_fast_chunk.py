"""FastMultiHeadAttention splits qkv(x) with chunk(3, dim=-1), then views and transposes each of queries, keys and values."""
MODULE = "modern"

import torch.nn.functional as F


class FastMultiHeadAttention(FastMultiHeadAttention):
    def forward(self, x):
        b, n, _ = x.shape
        queries, keys, values = (t.view(b, n, self.num_heads, self.head_dim).transpose(1, 2)
                                 for t in self.qkv(x).chunk(3, dim=-1))
        context = F.scaled_dot_product_attention(queries, keys, values, is_causal=True,
                                                 dropout_p=self.dropout_p if self.training else 0.0)
        return self.out_proj(context.transpose(1, 2).contiguous().view(b, n, self.d_out))
