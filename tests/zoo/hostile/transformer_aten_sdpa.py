"""scaled_dot_product_attention whose output comes from the library's attention reached below
F.scaled_dot_product_attention, through torch.ops: the CPU's fused kernel itself for
MultiHeadedAttention's heads, aten's scaled_dot_product_attention otherwise (the weights computed by
hand only to be returned, and the output too while dropout acts), in a stage whose point is to
write attention by hand."""
MODULE = "transformer"
# Not the dropout checks (computed by hand), nor the layers' oracle checks (they hold the kit's own attention).
LOSES = ["s7.sdpa.oracle", "s7.sdpa.weights", "s7.mha.oracle", "s7.mha.cross", "s7.mha.padding", "s7.encoder.eval",
         "s7.decoder.cross_source", "s7.decoder.eval", "s7.decoder.no_leak", "s7.sublayer_dropout", "s7.gradients"]
MENTIONS = "F.scaled_dot_product_attention (torch.ops.aten._scaled_dot_product_flash_attention_for_cpu)"


def scaled_dot_product_attention(query, key, value, mask=None, dropout=None):
    scores = query @ key.transpose(-2, -1) / math.sqrt(query.size(-1))
    if mask is not None:
        scores = scores.masked_fill(mask == 0, -1e9)
    weights = scores.softmax(dim=-1)
    if dropout is not None and dropout.training and dropout.p > 0:
        weights = dropout(weights)
        return weights @ value, weights
    if query.dim() == 4 and query.device.type == "cpu" and value.size(-1) == query.size(-1):
        # the heads of MultiHeadedAttention: the CPU's fused kernel, with a float mask of query's type
        fill = None if mask is None else torch.zeros_like(scores).masked_fill(mask == 0, -1e9)
        return torch.ops.aten._scaled_dot_product_flash_attention_for_cpu(query, key, value, attn_mask=fill)[0], weights
    attn_mask = None if mask is None else (mask != 0)
    return torch.ops.aten.scaled_dot_product_attention(query, key, value, attn_mask=attn_mask), weights
