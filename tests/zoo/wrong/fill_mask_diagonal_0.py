"""causal_weights_by_fill masks with triu(diagonal=0), hiding each token from itself: row 0 becomes nan."""
MODULE = "causal"
LOSES = ["s3.mask_fill"]
MENTIONS = "is nan"


def causal_weights_by_fill(attn_scores, d_k):
    n = attn_scores.shape[-1]
    future = torch.triu(torch.ones(n, n, dtype=torch.bool), diagonal=0)
    return torch.softmax(attn_scores.masked_fill(future, -torch.inf) / d_k ** 0.5, dim=-1)
