"""MultiHeadAttentionPyTorch passes a float 0/1 mask (triu of ones) as attn_mask: PyTorch adds float masks to the scores instead of hiding positions."""
MODULE = "multihead"
LOSES = ["s4.pytorch.no_leak", "s4.pytorch.known_weights"]


class MultiHeadAttentionPyTorch(MultiHeadAttentionPyTorch):
    def __init__(self, d_in, d_out, context_length, dropout, num_heads, qkv_bias=False):
        super().__init__(d_in, d_out, context_length, dropout, num_heads, qkv_bias)
        self.mask = torch.triu(torch.ones(context_length, context_length), diagonal=1)
