"""GELU is the sigmoid approximation x * sigmoid(1.702 x), not GPT-2's tanh one: within 2e-2 of it,
far outside the tolerance that lets a float32 constant through."""
MODULE = "gpt"
LOSES = ["s10.gelu"]
MENTIONS = "sigmoid approximation"


class GELU(nn.Module):
    def forward(self, x):
        return x * torch.sigmoid(1.702 * x)
