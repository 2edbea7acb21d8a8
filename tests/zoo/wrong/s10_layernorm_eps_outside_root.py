"""LayerNorm adds eps after the square root: (x - mean) / (std + eps)."""
MODULE = "gpt"
LOSES = ["s10.layernorm"]
MENTIONS = "eps added after the square root"
ONLY = True


class LayerNorm(LayerNorm):
    def forward(self, x):
        mean = x.mean(dim=-1, keepdim=True)
        std = x.std(dim=-1, keepdim=True, unbiased=False)
        return self.scale * (x - mean) / (std + self.eps) + self.shift
