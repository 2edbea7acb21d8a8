"""LayerNorm uses torch.var's default, the unbiased variance (divided by n - 1)."""
MODULE = "gpt"
LOSES = ["s10.layernorm", "s10.gpt.trained", "s10.cached.model"]
MENTIONS = "unbiased variance"
ONLY = True


class LayerNorm(LayerNorm):
    def forward(self, x):
        mean = x.mean(dim=-1, keepdim=True)
        var = x.var(dim=-1, keepdim=True)
        return self.scale * (x - mean) / torch.sqrt(var + self.eps) + self.shift
