"""scaled_dot_product_attention drops weights by hand with the module's p and rescales the kept ones by 1/p instead of 1/(1-p)."""
MODULE = "transformer"
LOSES = ["s7.mha.dropout", "s7.sdpa.dropout"]
MENTIONS = "1/p"
ONLY = True


def scaled_dot_product_attention(query, key, value, mask=None, dropout=None):
    scores = query @ key.transpose(-2, -1) / math.sqrt(query.size(-1))
    if mask is not None:
        scores = scores.masked_fill(mask == 0, -1e9)
    weights = scores.softmax(dim=-1)
    if dropout is not None and dropout.training and dropout.p > 0:
        keep = (torch.rand_like(weights) >= dropout.p).to(weights.dtype)
        weights = weights * keep / dropout.p
    return weights @ value, weights
