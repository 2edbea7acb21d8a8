"""masked_softmax takes the softmax first and then zeroes the hidden weights, without renormalising: rows sum to less than 1 and the padded keys still shift the denominators."""
MODULE = "practical"
LOSES = ["s6.masked.padding", "s6.softmax", "s6.mhsa.padding"]
MENTIONS = "filled before the softmax"


def masked_softmax(scores, mask):
    weights = torch.softmax(scores, dim=-1)
    if mask is not None:
        weights = weights.masked_fill(mask == 0, 0.0)
    return weights
