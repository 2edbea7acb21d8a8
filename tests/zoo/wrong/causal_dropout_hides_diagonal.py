"""CausalAttention's mask hides the diagonal too (triu with diagonal=0): token 0 sees nothing, so row 0 of its
weights is nan. The dropout check says the mask hides too much, never that a future token is visible, the opposite
of the bug (s3.mask_fill names it in stage 3's functions). The cascade is pinned: nan spoils every output of the
layer, so these checks and no others (the state_dict check judges the last token, which is finite)."""
MODULE = "causal"
LOSES = ["s3.causal.dropout", "s3.causal.known_weights", "s3.causal.seeded", "s3.causal.mask_buffer",
         "s3.causal.eval", "s3.causal.no_leak", "s3.causal.gradients", "s4.wrapper.seeded",
         "s4.wrapper.known_weights"]
ONLY = True
MENTIONS = "row 0 of the attention weights is nan in every sequence: every key it may see is hidden"


class CausalAttention(CausalAttention):
    def __init__(self, d_in, d_out, context_length, dropout, qkv_bias=False):
        super().__init__(d_in, d_out, context_length, dropout, qkv_bias)
        self.register_buffer("mask", torch.triu(torch.ones(context_length, context_length), diagonal=0))
