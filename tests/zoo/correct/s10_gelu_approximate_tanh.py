"""GELU through PyTorch's own tanh approximation, F.gelu(x, approximate="tanh")."""
MODULE = "gpt"


class GELU(nn.Module):
    def forward(self, x):
        return torch.nn.functional.gelu(x, approximate="tanh")
