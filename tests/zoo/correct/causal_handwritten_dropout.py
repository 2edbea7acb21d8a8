"""CausalAttention with hand-written inverted dropout: keep with probability 1-p, scale by 1/(1-p), only in training."""
MODULE = "causal"


class CausalAttention(CausalAttention):
    def forward(self, x):
        n = x.shape[1]
        queries, keys, values = self.W_query(x), self.W_key(x), self.W_value(x)
        scores = (queries @ keys.transpose(1, 2)).masked_fill(self.mask.bool()[:n, :n], -torch.inf)
        w = torch.softmax(scores / keys.shape[-1] ** 0.5, dim=-1)
        p = self.dropout.p
        if self.training and p > 0:
            w = w * (torch.rand_like(w) >= p) / (1 - p)
        return w @ values
