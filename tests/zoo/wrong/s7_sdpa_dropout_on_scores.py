"""scaled_dot_product_attention applies dropout to the scores before the softmax instead of to the weights after it."""
MODULE = "transformer"
LOSES = ["s7.sdpa.dropout", "s7.mha.dropout"]
MENTIONS = "zeroed no weight"
ONLY = True


def scaled_dot_product_attention(query, key, value, mask=None, dropout=None):
    scores = query @ key.transpose(-2, -1) / math.sqrt(query.size(-1))
    if dropout is not None:
        scores = dropout(scores)
    if mask is not None:
        scores = scores.masked_fill(mask == 0, -1e9)
    weights = scores.softmax(dim=-1)
    return weights @ value, weights
