"""softmax_naive divides by the sum of every exponential, e / e.sum(): right for the book's one row of scores,
wrong for a matrix of them, whose rows no longer sum to 1 (what a new user typed, filing issue 51)."""
MODULE = "simple"
LOSES = ["s1.softmax_naive"]
ONLY = True
MENTIONS = "sums to"


def softmax_naive(x):
    e = torch.exp(x)
    return e / e.sum()
