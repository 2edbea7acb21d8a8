"""causal_weights_by_fill fills the future with 0 instead of -inf, and exp(0) = 1 still gives it weight."""
MODULE = "causal"
LOSES = ["s3.mask_fill"]
MENTIONS = "which comes after it"


def causal_weights_by_fill(attn_scores, d_k):
    n = attn_scores.shape[-1]
    future = torch.triu(torch.ones(n, n, dtype=torch.bool), diagonal=1)
    return torch.softmax(attn_scores.masked_fill(future, 0.0) / d_k ** 0.5, dim=-1)
