"""SelfAttentionFused builds qkv with bias=False, though the contract asks for a bias."""
MODULE = "practical"
LOSES = ["s6.fused.structure", "s6.fused.known_weights"]
MENTIONS = "should have a bias"


class SelfAttentionFused(SelfAttentionFused):
    def __init__(self, dim):
        super().__init__(dim)
        self.qkv = nn.Linear(dim, 3 * dim, bias=False)
