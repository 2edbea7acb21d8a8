"""CausalAttention registers the mask with persistent=False, so the state_dict does not save it."""
MODULE = "causal"
LOSES = ["s3.causal.mask_buffer", "s3.causal.state_dict"]
MENTIONS = "persistent=False"


class CausalAttention(CausalAttention):
    def __init__(self, d_in, d_out, context_length, dropout, qkv_bias=False):
        super().__init__(d_in, d_out, context_length, dropout, qkv_bias)
        self.register_buffer("mask", torch.triu(torch.ones(context_length, context_length), diagonal=1),
                             persistent=False)
