"""MultiHeadAttentionWrapper keeps its heads in a plain Python list, which hides their parameters."""
MODULE = "multihead"
LOSES = ["s4.wrapper.structure", "s4.wrapper.known_weights"]
MENTIONS = "nn.ModuleList"


class MultiHeadAttentionWrapper(MultiHeadAttentionWrapper):
    def __init__(self, d_in, d_out, context_length, dropout, num_heads, qkv_bias=False):
        nn.Module.__init__(self)
        self.heads = [CausalAttention(d_in, d_out, context_length, dropout, qkv_bias) for _ in range(num_heads)]
