"""FastMultiHeadAttention calls F.scaled_dot_product_attention without is_causal=True: every token sees the whole sequence."""
MODULE = "modern"
LOSES = ["s8.fast.no_leak", "s8.fast.known_weights", "s8.fast.speed", "s8.fast.dropout"]
MENTIONS = "must not see the tokens after it"
ONLY = True

import torch.nn.functional as F


class FastMultiHeadAttention(FastMultiHeadAttention):
    def forward(self, x):
        b, n, _ = x.shape
        queries, keys, values = self.qkv(x).view(b, n, 3, self.num_heads, self.head_dim).permute(2, 0, 3, 1, 4)
        context = F.scaled_dot_product_attention(queries, keys, values,
                                                 dropout_p=self.dropout_p if self.training else 0.0)
        return self.out_proj(context.transpose(1, 2).reshape(b, n, self.d_out))
