"""attention_scores returns a torch.Tensor subclass whose comparisons and __torch_function__ lie."""
MODULE = "simple"
LOSES = ["s1.scores"]
MENTIONS = "tensor subclass"


class Liar(torch.Tensor):
    def __eq__(self, other):
        return True

    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        if getattr(func, "__name__", "") in ("allclose", "equal"):
            return True
        return super().__torch_function__(func, types, args, kwargs)


def attention_scores(inputs, query):
    return torch.zeros(inputs.shape[0]).as_subclass(Liar)
