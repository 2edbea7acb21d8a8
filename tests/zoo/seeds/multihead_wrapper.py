"""The chapter notes' ``MultiHeadAttentionWrapper`` (section 3.6.1), typed in as printed."""
MODULE = "multihead"
DIFFERS = {}


class MultiHeadAttentionWrapper(nn.Module):

    def __init__(self, d_in, d_out, context_length, dropout, num_heads, qkv_bias=False):
        super().__init__()
        self.heads = nn.ModuleList(
            [CausalAttention(d_in, d_out, context_length, dropout, qkv_bias) 
             for _ in range(num_heads)]
        )

    def forward(self, x):
        # 最后一维拼接, out_dim_final = num_heads * d_out
        return torch.cat([head(x) for head in self.heads], dim=-1)
