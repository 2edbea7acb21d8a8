"""The chapter notes' ``softmax_naive`` (section 3.3.1), typed in as printed.

It normalises with ``.sum(dim=0)``: right for the book's one-dimensional scores, but for a matrix of
scores it makes each *column* sum to 1. The stage's contract takes the softmax over the last
dimension, which is what gives each row of attention weights (one row per query) a sum of 1."""
MODULE = "simple"
DIFFERS = {"s1.softmax_naive": "normalises over dim 0"}


def softmax_naive(x):
    return torch.exp(x) / torch.exp(x).sum(dim=0)
