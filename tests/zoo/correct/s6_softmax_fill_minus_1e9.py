"""masked_softmax fills hidden keys with -1e9 instead of torch.finfo(dtype).min (finite, so fully padded rows stay uniform)."""
MODULE = "practical"


def masked_softmax(scores, mask):
    if mask is not None:
        scores = scores.masked_fill(mask == 0, -1e9)
    return torch.softmax(scores, dim=-1)
