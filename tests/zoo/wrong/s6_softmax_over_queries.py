"""masked_softmax normalises over dim=1 (the queries of a (batch, seq, seq) score matrix) instead of the last dim, the keys."""
MODULE = "practical"
LOSES = ["s6.softmax"]


def masked_softmax(scores, mask):
    if mask is not None:
        scores = scores.masked_fill(mask == 0, torch.finfo(scores.dtype).min)
    return torch.softmax(scores, dim=1)
