"""MultiHeadAttentionPyTorch with a float additive attn_mask (-inf above the diagonal), and count_parameters over named_parameters."""
MODULE = "multihead"


class MultiHeadAttentionPyTorch(MultiHeadAttentionPyTorch):
    def __init__(self, d_in, d_out, context_length, dropout, num_heads, qkv_bias=False):
        super().__init__(d_in, d_out, context_length, dropout, num_heads, qkv_bias)
        self.register_buffer("mask", torch.full((context_length, context_length), -torch.inf).triu(1))


def count_parameters(module):
    return sum(p.numel() for _, p in module.named_parameters() if p.requires_grad)
