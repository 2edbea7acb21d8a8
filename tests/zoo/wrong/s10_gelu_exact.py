"""GELU is PyTorch's default F.gelu, the exact erf form, not GPT-2's tanh approximation."""
MODULE = "gpt"
LOSES = ["s10.gelu"]
MENTIONS = "exact GELU"


class GELU(nn.Module):
    def forward(self, x):
        return torch.nn.functional.gelu(x)
