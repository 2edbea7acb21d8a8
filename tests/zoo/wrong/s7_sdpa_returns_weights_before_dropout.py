"""scaled_dot_product_attention uses the dropped-out weights for the output but returns the weights from before dropout."""
MODULE = "transformer"
LOSES = ["s7.sdpa.dropout"]
MENTIONS = "return the weights after dropout"
ONLY = True


def scaled_dot_product_attention(query, key, value, mask=None, dropout=None):
    scores = query @ key.transpose(-2, -1) / math.sqrt(query.size(-1))
    if mask is not None:
        scores = scores.masked_fill(mask == 0, -1e9)
    weights = scores.softmax(dim=-1)
    used = dropout(weights) if dropout is not None else weights
    return used @ value, weights
