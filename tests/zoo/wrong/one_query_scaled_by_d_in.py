"""attend_one_query scales by sqrt of the input width d_in instead of the key width d_k."""
MODULE = "self_attention"
LOSES = ["s2.one_query.book", "s2.one_query.other"]
MENTIONS = "attn_weights_2"


def attend_one_query(x_query, inputs, W_query, W_key, W_value):
    query = x_query @ W_query
    keys = inputs @ W_key
    values = inputs @ W_value
    attn_scores = query @ keys.T
    attn_weights = torch.softmax(attn_scores / inputs.shape[-1] ** 0.5, dim=-1)
    return attn_scores, attn_weights, attn_weights @ values
