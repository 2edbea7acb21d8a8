"""SelfAttentionFused builds qkv with bias=False, though the contract asks for a bias. Priced once,
in the structure check: the known-weights check gives qkv the bias it lacks and judges the attention."""
MODULE = "practical"
LOSES = ["s6.fused.structure"]
ONLY = True
MENTIONS = "should have a bias"


class SelfAttentionFused(SelfAttentionFused):
    def __init__(self, dim):
        super().__init__(dim)
        self.qkv = nn.Linear(dim, 3 * dim, bias=False)
