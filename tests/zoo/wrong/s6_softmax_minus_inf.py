"""masked_softmax fills hidden keys with -inf: a sequence of nothing but padding gets nan weights, which poison the whole batch."""
MODULE = "practical"
LOSES = ["s6.softmax", "s6.masked.padding", "s6.mhsa.padding"]
MENTIONS = "must stay finite"
ONLY = True


def masked_softmax(scores, mask):
    if mask is not None:
        scores = scores.masked_fill(mask == 0, float("-inf"))
    return torch.softmax(scores, dim=-1)
