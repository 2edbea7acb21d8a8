"""FastMultiHeadAttention keeps stage 4's three projections W_query, W_key, W_value instead of one fused qkv layer."""
MODULE = "modern"
LOSES = ["s8.fast.structure", "s8.fast.known_weights", "s8.fast.speed", "s8.fast.dropout", "s8.fast.eval"]
MENTIONS = "should be an nn.Linear"
ONLY = True

import torch.nn.functional as F


class FastMultiHeadAttention(FastMultiHeadAttention):
    def __init__(self, d_in, d_out, context_length, dropout, num_heads, qkv_bias=False):
        super().__init__(d_in, d_out, context_length, dropout, num_heads, qkv_bias)
        del self.qkv
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)

    def forward(self, x):
        b, n, _ = x.shape
        split = lambda t: t.view(b, n, self.num_heads, self.head_dim).transpose(1, 2)
        queries, keys, values = split(self.W_query(x)), split(self.W_key(x)), split(self.W_value(x))
        context = F.scaled_dot_product_attention(queries, keys, values, is_causal=True,
                                                 dropout_p=self.dropout_p if self.training else 0.0)
        return self.out_proj(context.transpose(1, 2).reshape(b, n, self.d_out))
