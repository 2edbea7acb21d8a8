"""scaled_dot_product_attention whose output comes from F.scaled_dot_product_attention (the weights
computed by hand only to be returned), in a stage whose point is to write attention by hand."""
MODULE = "transformer"
LOSES = ["s7.sdpa.*", "s7.mha.oracle", "s7.mha.cross", "s7.mha.padding", "s7.mha.dropout", "s7.encoder.eval",
         "s7.decoder.cross_source", "s7.decoder.eval", "s7.decoder.no_leak", "s7.sublayer_dropout", "s7.gradients"]
MENTIONS = "F.scaled_dot_product_attention"

import torch.nn.functional as F


def scaled_dot_product_attention(query, key, value, mask=None, dropout=None):
    scores = query @ key.transpose(-2, -1) / math.sqrt(query.size(-1))
    if mask is not None:
        scores = scores.masked_fill(mask == 0, -1e9)
    weights = scores.softmax(dim=-1)
    if dropout is not None:
        weights = dropout(weights)
    attn_mask = None if mask is None else (mask != 0)
    return F.scaled_dot_product_attention(query, key, value, attn_mask=attn_mask), weights
