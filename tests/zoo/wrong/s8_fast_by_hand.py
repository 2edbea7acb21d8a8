"""FastMultiHeadAttention computes softmax(QK^T / sqrt(d)) V by hand with a causal mask instead of calling F.scaled_dot_product_attention."""
MODULE = "modern"
LOSES = ["s8.fast.speed", "s8.fast.sdpa"]
MENTIONS = "times as long"
ONLY = True


class FastMultiHeadAttention(FastMultiHeadAttention):
    def forward(self, x):
        b, n, _ = x.shape
        queries, keys, values = self.qkv(x).view(b, n, 3, self.num_heads, self.head_dim).permute(2, 0, 3, 1, 4)
        scores = queries @ keys.transpose(-2, -1) / self.head_dim ** 0.5
        hidden = torch.ones(n, n, dtype=torch.bool, device=x.device).triu(1)
        weights = torch.softmax(scores.masked_fill(hidden, -torch.inf), dim=-1)
        weights = torch.nn.functional.dropout(weights, self.dropout_p, training=self.training)
        return self.out_proj((weights @ values).transpose(1, 2).reshape(b, n, self.d_out))
