"""masked_softmax refuses scores below float32 with an error of its own. The bfloat16 probe's feedback says what
was raised, and no more: the fill's hint (float32's minimum overflowing bfloat16) is for a fill that overflowed,
which this code never did."""
MODULE = "practical"
LOSES = ["s6.softmax"]
ONLY = True
MENTIONS = "masked_softmax(scores.bfloat16(), mask): masked_softmax raised TypeError"


def masked_softmax(scores, mask):
    if scores.dtype not in (torch.float32, torch.float64):
        raise TypeError(f"scores must be float32 or float64, not {scores.dtype}")
    if mask is not None:
        scores = scores.masked_fill(mask == 0, torch.finfo(scores.dtype).min)
    return torch.softmax(scores, dim=-1)
