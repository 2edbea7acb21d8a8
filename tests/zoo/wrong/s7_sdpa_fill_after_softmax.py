"""scaled_dot_product_attention applies the -1e9 fill to the weights after the softmax instead of to the scores before it."""
MODULE = "transformer"
LOSES = ["s7.sdpa.oracle", "s7.sdpa.weights", "s7.mha.padding"]


def scaled_dot_product_attention(query, key, value, mask=None, dropout=None):
    scores = query @ key.transpose(-2, -1) / math.sqrt(query.size(-1))
    weights = scores.softmax(dim=-1)
    if mask is not None:
        weights = weights.masked_fill(mask == 0, -1e9)
    if dropout is not None:
        weights = dropout(weights)
    return weights @ value, weights
