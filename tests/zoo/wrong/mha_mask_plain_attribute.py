"""MultiHeadAttention stores the mask as a plain tensor attribute, so .to(device) leaves it behind."""
MODULE = "multihead"
LOSES = ["s4.mha.structure", "s4.mha.device"]
MENTIONS = "registered (persistent) buffer"


class MultiHeadAttention(MultiHeadAttention):
    def __init__(self, d_in, d_out, context_length, dropout, num_heads, qkv_bias=False):
        super().__init__(d_in, d_out, context_length, dropout, num_heads, qkv_bias)
        del self.mask
        self.mask = torch.triu(torch.ones(context_length, context_length), diagonal=1)
