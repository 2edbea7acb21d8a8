"""softmax_naive returns an object that is equal to everything and close to everything."""
MODULE = "simple"
LOSES = ["s1.softmax_naive"]
MENTIONS = "should be a torch.Tensor"


class Anything:
    shape = dtype = device = None

    def __eq__(self, other):
        return True

    def __getattr__(self, name):
        return lambda *args, **kwargs: self


def softmax_naive(scores):
    return Anything()
