"""Hand-written dropout keeps weights with probability 1-p but scales them by 1/p instead of 1/(1-p)."""
MODULE = "causal"
LOSES = ["s3.causal.dropout"]
MENTIONS = "that is 1/p"


class CausalAttention(CausalAttention):
    def forward(self, x):
        n = x.shape[1]
        queries, keys, values = self.W_query(x), self.W_key(x), self.W_value(x)
        scores = (queries @ keys.transpose(1, 2)).masked_fill(self.mask.bool()[:n, :n], -torch.inf)
        w = torch.softmax(scores / keys.shape[-1] ** 0.5, dim=-1)
        p = self.dropout.p
        if self.training and p > 0:
            keep = (torch.rand_like(w) >= p).to(w.dtype)
            w = w * keep / p
        return w @ values
