"""softmax_stable as exp(s - logsumexp(s)), and normalize_by_sum with keepdim over the last dim."""
MODULE = "simple"


def softmax_stable(scores):
    return torch.exp(scores - torch.logsumexp(scores, dim=-1, keepdim=True))


def normalize_by_sum(scores):
    return scores / torch.sum(scores, dim=-1, keepdim=True)
