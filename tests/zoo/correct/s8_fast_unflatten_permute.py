"""FastMultiHeadAttention with unflatten(-1, (3, heads, head_dim)), permute and unbind, and movedim/flatten to merge the heads."""
MODULE = "modern"

import torch.nn.functional as F


class FastMultiHeadAttention(FastMultiHeadAttention):
    def forward(self, x):
        qkv = self.qkv(x).unflatten(-1, (3, self.num_heads, self.head_dim)).permute(2, 0, 3, 1, 4)
        queries, keys, values = qkv.unbind(0)
        context = F.scaled_dot_product_attention(queries, keys, values, None,
                                                 self.dropout_p if self.training else 0.0, True)
        return self.out_proj(context.movedim(1, 2).flatten(-2))
