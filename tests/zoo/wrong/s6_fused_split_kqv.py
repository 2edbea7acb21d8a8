"""SelfAttentionFused unpacks the split qkv output in the wrong order (keys, queries, values), though qkv.weight stacks W_q, W_k, W_v."""
MODULE = "practical"
LOSES = ["s6.fused.known_weights"]
ONLY = True


class SelfAttentionFused(SelfAttentionFused):
    def forward(self, x):
        keys, queries, values = self.qkv(x).split(self.dim, dim=-1)
        scores = queries @ keys.transpose(-2, -1) / self.dim ** 0.5
        return torch.softmax(scores, dim=-1) @ values
