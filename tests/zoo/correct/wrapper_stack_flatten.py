"""MultiHeadAttentionWrapper stacks the heads on a new axis and flattens it into the last one."""
MODULE = "multihead"


class MultiHeadAttentionWrapper(MultiHeadAttentionWrapper):
    def __init__(self, d_in, d_out, context_length, dropout, num_heads, qkv_bias=False):
        nn.Module.__init__(self)
        self.heads = nn.ModuleList()
        for _ in range(num_heads):
            self.heads.append(CausalAttention(d_in, d_out, context_length, dropout, qkv_bias))

    def forward(self, x):
        return torch.stack([head(x) for head in self.heads], dim=-2).flatten(-2)
