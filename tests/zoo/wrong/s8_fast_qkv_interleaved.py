"""FastMultiHeadAttention splits qkv per head, view(b, n, num_heads, 3, head_dim), though qkv's rows are [W_query; W_key; W_value] stacked whole."""
MODULE = "modern"
LOSES = ["s8.fast.known_weights", "s8.fast.speed"]
MENTIONS = "compared with stage 4's MultiHeadAttention"
ONLY = True

import torch.nn.functional as F


class FastMultiHeadAttention(FastMultiHeadAttention):
    def forward(self, x):
        b, n, _ = x.shape
        queries, keys, values = self.qkv(x).view(b, n, self.num_heads, 3, self.head_dim).permute(3, 0, 2, 1, 4)
        context = F.scaled_dot_product_attention(queries, keys, values, is_causal=True,
                                                 dropout_p=self.dropout_p if self.training else 0.0)
        return self.out_proj(context.transpose(1, 2).reshape(b, n, self.d_out))
