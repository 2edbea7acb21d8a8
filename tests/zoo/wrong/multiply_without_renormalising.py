"""causal_weights_by_multiplication zeroes the future after the softmax but never renormalises the rows."""
MODULE = "causal"
LOSES = ["s3.mask_multiply"]
MENTIONS = "sums to"


def causal_weights_by_multiplication(attn_scores, d_k):
    weights = torch.softmax(attn_scores / d_k ** 0.5, dim=-1)
    n = attn_scores.shape[-1]
    return weights * torch.tril(torch.ones(n, n))
