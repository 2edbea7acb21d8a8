"""Causal mask off by one: diagonal=0 hides every token from itself (and leaves token 0 nothing to attend to)."""
MODULE = "causal"
LOSES = ["s3.causal.known_weights", "s3.causal.seeded", "s3.causal.mask_buffer"]


class CausalAttention(CausalAttention):
    def __init__(self, d_in, d_out, context_length, dropout, qkv_bias=False):
        super().__init__(d_in, d_out, context_length, dropout, qkv_bias)
        self.mask = torch.triu(torch.ones(context_length, context_length), diagonal=0)
