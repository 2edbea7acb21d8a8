"""scaled_dot_product_attention fills where mask == 1 (masked_fill(mask == 1, -1e9)): it hides the visible keys and shows the hidden ones."""
MODULE = "transformer"
LOSES = ["s7.sdpa.oracle", "s7.sdpa.weights", "s7.mha.padding", "s7.decoder.no_leak"]


def scaled_dot_product_attention(query, key, value, mask=None, dropout=None):
    scores = query @ key.transpose(-2, -1) / math.sqrt(query.size(-1))
    if mask is not None:
        scores = scores.masked_fill(mask == 1, -1e9)
    weights = scores.softmax(dim=-1)
    if dropout is not None:
        weights = dropout(weights)
    return weights @ value, weights
