"""FastMultiHeadAttention passes F.scaled_dot_product_attention an explicit boolean attn_mask (a lower triangle) instead of is_causal=True: right outputs, but the kernel cannot skip the hidden blocks."""
MODULE = "modern"
LOSES = ["s8.fast.speed"]
MENTIONS = "times as long"
ONLY = True

import torch.nn.functional as F


class FastMultiHeadAttention(FastMultiHeadAttention):
    def forward(self, x):
        b, n, _ = x.shape
        queries, keys, values = self.qkv(x).view(b, n, 3, self.num_heads, self.head_dim).permute(2, 0, 3, 1, 4)
        visible = torch.ones(n, n, dtype=torch.bool, device=x.device).tril()
        context = F.scaled_dot_product_attention(queries, keys, values, attn_mask=visible,
                                                 dropout_p=self.dropout_p if self.training else 0.0)
        return self.out_proj(context.transpose(1, 2).reshape(b, n, self.d_out))
