"""CausalAttentionWithBuffer registers the mask with persistent=False, so it is not saved in the state_dict."""
MODULE = "buffers"
LOSES = ["s5.kinds", "s5.with.state_dict"]
MENTIONS = "persistent=False"


class CausalAttentionWithBuffer(CausalAttentionWithBuffer):
    def __init__(self, d_in, d_out, context_length, dropout, qkv_bias=False):
        super().__init__(d_in, d_out, context_length, dropout, qkv_bias)
        self.register_buffer("mask", torch.triu(torch.ones(context_length, context_length), diagonal=1),
                             persistent=False)
