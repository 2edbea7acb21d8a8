"""SelfAttentionFused scales by 1/sqrt(qkv.out_features), the fused width 3 * dim, instead of 1/sqrt(dim)."""
MODULE = "practical"
LOSES = ["s6.fused.known_weights"]
ONLY = True


class SelfAttentionFused(SelfAttentionFused):
    def forward(self, x):
        queries, keys, values = self.qkv(x).split(self.dim, dim=-1)
        scores = queries @ keys.transpose(-2, -1) / self.qkv.out_features ** 0.5
        return torch.softmax(scores, dim=-1) @ values
