"""FastMultiHeadAttention passes dropout_p=self.dropout_p to F.scaled_dot_product_attention in eval mode too."""
MODULE = "modern"
LOSES = ["s8.fast.eval"]
MENTIONS = "dropout must be off in eval mode"
ONLY = True

import torch.nn.functional as F


class FastMultiHeadAttention(FastMultiHeadAttention):
    def forward(self, x):
        b, n, _ = x.shape
        queries, keys, values = self.qkv(x).view(b, n, 3, self.num_heads, self.head_dim).permute(2, 0, 3, 1, 4)
        context = F.scaled_dot_product_attention(queries, keys, values, is_causal=True, dropout_p=self.dropout_p)
        return self.out_proj(context.transpose(1, 2).reshape(b, n, self.d_out))
