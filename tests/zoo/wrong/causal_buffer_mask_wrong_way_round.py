"""CausalAttention registers its mask as a buffer, but built with tril: it hides the past and shows the future. The
dropout check says the mask hides the wrong tokens (some earlier token never gets weight, and a future one does),
not only one of the two; the state_dict check, which is about the buffer, passes."""
MODULE = "causal"
LOSES = ["s3.causal.dropout", "s3.causal.no_leak", "s3.causal.known_weights", "s3.causal.mask_buffer",
         "s3.causal.seeded", "s4.wrapper.seeded", "s4.wrapper.known_weights"]
ONLY = True
MENTIONS = "the mask hides the wrong tokens"


class CausalAttention(CausalAttention):
    def __init__(self, d_in, d_out, context_length, dropout, qkv_bias=False):
        super().__init__(d_in, d_out, context_length, dropout, qkv_bias)
        self.register_buffer("mask", torch.tril(torch.ones(context_length, context_length), diagonal=-1))
