"""softmax_stable is just the naive formula (no max subtraction), so exp overflows for scores near 1000."""
MODULE = "simple"
LOSES = ["s1.softmax_stable"]
MENTIONS = "subtract the largest score"


def softmax_stable(scores):
    exp = torch.exp(scores)
    return exp / exp.sum(dim=-1, keepdim=True)
