"""softmax_naive divides by the sum of the whole tensor instead of the sum over the last dim."""
MODULE = "simple"
LOSES = ["s1.softmax_naive"]


def softmax_naive(scores):
    exp = torch.exp(scores)
    return exp / exp.sum()
