"""scaled_dot_product_attention divides the scores by d_k ** 2 instead of sqrt(d_k) (the seed notes' `k_dim ** 2`)."""
MODULE = "transformer"
LOSES = ["s7.sdpa.oracle", "s7.sdpa.weights", "s7.mha.oracle"]


def scaled_dot_product_attention(query, key, value, mask=None, dropout=None):
    k_dim = key.size(-1)
    scores = query @ key.transpose(-2, -1) / k_dim ** 2
    if mask is not None:
        scores = scores.masked_fill(mask == 0, -1e9)
    weights = scores.softmax(dim=-1)
    if dropout is not None:
        weights = dropout(weights)
    return weights @ value, weights
