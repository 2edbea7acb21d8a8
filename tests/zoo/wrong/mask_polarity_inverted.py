"""Mask polarity inverted: the -inf fill uses tril, hiding the past and showing the future."""
MODULE = "causal"
LOSES = ["s3.causal.no_leak", "s3.causal.known_weights", "s3.causal.mask_buffer"]
MENTIONS = "a token must not see the tokens after it"


class CausalAttention(CausalAttention):
    def __init__(self, d_in, d_out, context_length, dropout, qkv_bias=False):
        super().__init__(d_in, d_out, context_length, dropout, qkv_bias)
        self.mask = torch.tril(torch.ones(context_length, context_length), diagonal=-1)
