"""Mask polarity inverted: the -inf fill uses tril, hiding the past and showing the future. Every output of the
layer is wrong, so the checks of its outputs fail, and no other: the state_dict check flips an entry the mask does
not hide yet (it used to hide token 0 from the last token, which this mask already does, and blamed the buffer).
The dropout check names the mask as hiding the wrong tokens, neither only too much nor only too little."""
MODULE = "causal"
LOSES = ["s3.causal.no_leak", "s3.causal.known_weights", "s3.causal.mask_buffer", "s3.causal.seeded",
         "s3.causal.dropout", "s4.wrapper.seeded", "s4.wrapper.known_weights"]
ONLY = True
MENTIONS = "a token must not see the tokens after it"


class CausalAttention(CausalAttention):
    def __init__(self, d_in, d_out, context_length, dropout, qkv_bias=False):
        super().__init__(d_in, d_out, context_length, dropout, qkv_bias)
        self.mask = torch.tril(torch.ones(context_length, context_length), diagonal=-1)
