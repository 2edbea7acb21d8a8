"""masked_softmax adds a float mask built with torch.where (0 where visible, the dtype's min where hidden), as Hugging Face code does, then F.softmax."""
MODULE = "practical"

import torch.nn.functional as F


def masked_softmax(scores, mask):
    if mask is not None:
        bias = torch.where(mask.bool(), 0.0, torch.finfo(scores.dtype).min).to(scores.dtype)
        scores = scores + bias
    return F.softmax(scores, dim=-1)
