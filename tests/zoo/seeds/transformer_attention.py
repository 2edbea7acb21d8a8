"""The Transformer notes' ``attention`` function (section 3.1, padding mask), typed in as printed, as
the contract's ``scaled_dot_product_attention``. The imports are those the snippet assumes."""
MODULE = "transformer"
DIFFERS = {}

import math  # noqa: E402
import torch.nn.functional as F  # noqa: E402


def attention(query, key, value, mask=None, dropout=None):
    "Compute 'Scaled Dot Product Attention'"
    d_k = query.size(-1)
    scores = torch.matmul(query, key.transpose(-2, -1)) / math.sqrt(d_k)
    if mask is not None:
        scores = scores.masked_fill(mask == 0, -1e9) # mask步骤，用 -1e9 代表负无穷
    p_attn = F.softmax(scores, dim = -1)
    if dropout is not None:
        p_attn = dropout(p_attn)
    return torch.matmul(p_attn, value), p_attn


scaled_dot_product_attention = attention
