"""causal_weights_by_fill with torch.where and a tril "allowed" mask instead of masked_fill."""
MODULE = "causal"


def causal_weights_by_fill(attn_scores, d_k):
    n = attn_scores.shape[-1]
    allowed = torch.tril(torch.ones(n, n, dtype=torch.bool, device=attn_scores.device))
    scores = torch.where(allowed, attn_scores, torch.full_like(attn_scores, float("-inf")))
    return torch.softmax(scores / d_k ** 0.5, dim=-1)
