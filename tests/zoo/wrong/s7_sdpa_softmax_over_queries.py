"""scaled_dot_product_attention takes the softmax over dim=-2 (the queries) instead of dim=-1 (the keys)."""
MODULE = "transformer"
LOSES = ["s7.sdpa.weights", "s7.sdpa.oracle"]
MENTIONS = "sums to"


def scaled_dot_product_attention(query, key, value, mask=None, dropout=None):
    scores = query @ key.transpose(-2, -1) / math.sqrt(query.size(-1))
    if mask is not None:
        scores = scores.masked_fill(mask == 0, -1e9)
    weights = scores.softmax(dim=-2)
    if dropout is not None:
        weights = dropout(weights)
    return weights @ value, weights
