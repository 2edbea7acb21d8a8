"""masked_softmax fills hidden scores with float32's most negative number whatever the scores' dtype: in bfloat16
that number is -inf, so a row of nothing but padding is nan again. Only a probe below float32 shows it."""
MODULE = "practical"
LOSES = ["s6.softmax"]
ONLY = True
MENTIONS = "torch.finfo(scores.dtype).min"


def masked_softmax(scores, mask):
    if mask is not None:
        scores = scores.masked_fill(mask == 0, torch.finfo(torch.float32).min)
    return torch.softmax(scores, dim=-1)
