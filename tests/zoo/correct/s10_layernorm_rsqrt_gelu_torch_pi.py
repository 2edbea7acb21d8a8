"""LayerNorm by torch.rsqrt of the mean squared deviation, and GELU with torch.pi and torch.pow."""
MODULE = "gpt"


class LayerNorm(nn.Module):
    def __init__(self, emb_dim):
        super().__init__()
        self.eps = 1e-5
        self.scale = nn.Parameter(torch.ones(emb_dim))
        self.shift = nn.Parameter(torch.zeros(emb_dim))

    def forward(self, x):
        centred = x - x.mean(-1, keepdim=True)
        var = centred.pow(2).mean(-1, keepdim=True)
        return centred * torch.rsqrt(var + self.eps) * self.scale + self.shift


class GELU(nn.Module):
    def forward(self, x):
        c = torch.sqrt(torch.tensor(2.0 / torch.pi, dtype=x.dtype, device=x.device))
        return 0.5 * x * (1.0 + torch.tanh(c * (x + 0.044715 * torch.pow(x, 3))))
