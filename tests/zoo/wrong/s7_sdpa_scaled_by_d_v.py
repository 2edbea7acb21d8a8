"""scaled_dot_product_attention takes d_k from value.size(-1): right only while d_v == d_k, as inside MultiHeadedAttention."""
MODULE = "transformer"
LOSES = ["s7.sdpa.oracle", "s7.sdpa.weights"]
ONLY = True


def scaled_dot_product_attention(query, key, value, mask=None, dropout=None):
    d_k = value.size(-1)
    scores = query @ key.transpose(-2, -1) / math.sqrt(d_k)
    if mask is not None:
        scores = scores.masked_fill(mask == 0, -1e9)
    weights = scores.softmax(dim=-1)
    if dropout is not None:
        weights = dropout(weights)
    return weights @ value, weights
