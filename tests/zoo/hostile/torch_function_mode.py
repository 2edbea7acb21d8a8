"""At import, enters a TorchFunctionMode that answers True to every comparison and leaves it
active for the rest of the process; softmax_naive is wrong."""
MODULE = "simple"
LOSES = ["s1.*"]
MENTIONS = "TorchFunctionMode"

from torch.overrides import TorchFunctionMode


class AlwaysEqual(TorchFunctionMode):
    def __torch_function__(self, func, types, args=(), kwargs=None):
        if getattr(func, "__name__", "") in ("allclose", "equal"):
            return True
        return func(*args, **(kwargs or {}))


AlwaysEqual().__enter__()


def softmax_naive(scores):
    return torch.exp(scores)
