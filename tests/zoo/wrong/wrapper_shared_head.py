"""MultiHeadAttentionWrapper repeats one CausalAttention ([head] * num_heads), so every head shares the same weights."""
MODULE = "multihead"
LOSES = ["s4.wrapper.seeded", "s4.wrapper.known_weights"]


class MultiHeadAttentionWrapper(MultiHeadAttentionWrapper):
    def __init__(self, d_in, d_out, context_length, dropout, num_heads, qkv_bias=False):
        nn.Module.__init__(self)
        self.heads = nn.ModuleList([CausalAttention(d_in, d_out, context_length, dropout, qkv_bias)] * num_heads)
