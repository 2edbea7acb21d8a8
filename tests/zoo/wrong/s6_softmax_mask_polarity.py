"""masked_softmax fills where mask == 1 instead of mask == 0: it hides the real tokens and lets every query see only the padding."""
MODULE = "practical"
LOSES = ["s6.masked.padding", "s6.softmax", "s6.mhsa.padding"]
MENTIONS = "mask 0 = hidden"


def masked_softmax(scores, mask):
    if mask is not None:
        scores = scores.masked_fill(mask == 1, torch.finfo(scores.dtype).min)
    return torch.softmax(scores, dim=-1)
