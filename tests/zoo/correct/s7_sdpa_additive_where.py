"""scaled_dot_product_attention adds a float bias made with torch.where (0 visible, -1e9 hidden), uses F.softmax and key.mT."""
MODULE = "transformer"

import torch.nn.functional as F


def scaled_dot_product_attention(query, key, value, mask=None, dropout=None):
    scores = torch.matmul(query, key.mT) * query.size(-1) ** -0.5
    if mask is not None:
        scores = scores + torch.where(mask != 0, 0.0, -1e9).to(scores.dtype)
    weights = F.softmax(scores, dim=-1)
    if dropout is not None:
        weights = dropout(weights)
    return torch.matmul(weights, value), weights
