"""CausalAttentionWithoutBuffers registers its mask as a buffer anyway, so it cannot show what goes wrong without one."""
MODULE = "buffers"
LOSES = ["s5.kinds", "s5.without.device", "s5.without.state_dict"]
MENTIONS = "keep it a plain attribute"


class CausalAttentionWithoutBuffers(CausalAttentionWithoutBuffers):
    def __init__(self, d_in, d_out, context_length, dropout, qkv_bias=False):
        super().__init__(d_in, d_out, context_length, dropout, qkv_bias)
        del self.mask
        self.register_buffer("mask", torch.triu(torch.ones(context_length, context_length), diagonal=1))
