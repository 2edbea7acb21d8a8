"""SelfAttention_v2 as x @ W.weight.T (+ bias) through F.linear, and SelfAttention_v1 with torch.matmul and .mT."""
MODULE = "self_attention"

import torch.nn.functional as F


class SelfAttention_v1(SelfAttention_v1):
    def forward(self, x):
        queries = torch.matmul(x, self.W_query)
        keys = torch.matmul(x, self.W_key)
        values = torch.matmul(x, self.W_value)
        return torch.softmax(torch.matmul(queries, keys.mT) / keys.size(-1) ** 0.5, dim=-1) @ values


class SelfAttention_v2(SelfAttention_v2):
    def forward(self, x):
        q = F.linear(x, self.W_query.weight, self.W_query.bias)
        k = F.linear(x, self.W_key.weight, self.W_key.bias)
        v = F.linear(x, self.W_value.weight, self.W_value.bias)
        return torch.softmax(q @ k.mT * k.shape[-1] ** -0.5, dim=-1) @ v


def copy_v2_into_v1(sa_v2, sa_v1):
    for name in ("W_query", "W_key", "W_value"):
        getattr(sa_v1, name).data = getattr(sa_v2, name).weight.detach().T.clone()
    return sa_v1
