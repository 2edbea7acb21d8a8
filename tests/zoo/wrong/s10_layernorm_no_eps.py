"""LayerNorm divides by the standard deviation with no eps."""
MODULE = "gpt"
LOSES = ["s10.layernorm"]
MENTIONS = "no eps"
ONLY = True


class LayerNorm(LayerNorm):
    def forward(self, x):
        mean = x.mean(dim=-1, keepdim=True)
        return self.scale * (x - mean) / x.std(dim=-1, keepdim=True, unbiased=False) + self.shift
