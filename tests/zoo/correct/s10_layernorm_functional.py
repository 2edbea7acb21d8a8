"""LayerNorm through F.layer_norm, with scale and shift as its weight and bias."""
MODULE = "gpt"


class LayerNorm(LayerNorm):
    def forward(self, x):
        return torch.nn.functional.layer_norm(x, x.shape[-1:], weight=self.scale, bias=self.shift, eps=self.eps)
