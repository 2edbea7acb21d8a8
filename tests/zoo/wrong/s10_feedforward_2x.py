"""FeedForward widens to 2 x emb_dim instead of 4 x."""
MODULE = "gpt"
LOSES = ["s10.feedforward", "s10.gpt.structure", "s10.gpt.loads", "s10.gpt.trained", "s10.gpt.writes", "s10.cached.model"]
MENTIONS = "layers.0.weight"


class FeedForward(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        d = cfg["emb_dim"]
        self.layers = nn.Sequential(nn.Linear(d, 2 * d), GELU(), nn.Linear(2 * d, d))

    def forward(self, x):
        return self.layers(x)
