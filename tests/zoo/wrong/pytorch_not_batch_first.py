"""MultiHeadAttentionPyTorch leaves out batch_first=True, so nn.MultiheadAttention reads (batch, tokens) as (tokens, batch)."""
MODULE = "multihead"
LOSES = ["s4.pytorch.known_weights", "s4.pytorch.no_leak"]


class MultiHeadAttentionPyTorch(MultiHeadAttentionPyTorch):
    def __init__(self, d_in, d_out, context_length, dropout, num_heads, qkv_bias=False):
        super().__init__(d_in, d_out, context_length, dropout, num_heads, qkv_bias)
        self.mha = nn.MultiheadAttention(d_out, num_heads, dropout=dropout, bias=qkv_bias)
