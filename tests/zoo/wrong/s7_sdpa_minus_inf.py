"""scaled_dot_product_attention fills hidden scores with -inf: a query with no visible key gets nan weights."""
MODULE = "transformer"
LOSES = ["s7.sdpa.weights", "s7.mha.padding"]
MENTIONS = "must stay finite"
ONLY = True


def scaled_dot_product_attention(query, key, value, mask=None, dropout=None):
    scores = query @ key.transpose(-2, -1) / math.sqrt(query.size(-1))
    if mask is not None:
        scores = scores.masked_fill(mask == 0, float("-inf"))
    weights = scores.softmax(dim=-1)
    if dropout is not None:
        weights = dropout(weights)
    return weights @ value, weights
