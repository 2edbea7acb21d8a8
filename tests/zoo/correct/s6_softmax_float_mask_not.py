"""masked_softmax turns any 0/1 mask (long, float or bool) into a bool one and fills where it is False (~mask.bool())."""
MODULE = "practical"


def masked_softmax(scores, mask):
    if mask is not None:
        scores = scores.masked_fill(~mask.to(torch.bool), torch.finfo(scores.dtype).min)
    return scores.softmax(-1)
