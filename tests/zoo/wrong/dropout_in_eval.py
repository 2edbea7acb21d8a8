"""F.dropout(w, p) without training=self.training keeps dropping weights in eval mode."""
MODULE = "causal"
LOSES = ["s3.causal.eval"]
MENTIONS = "training=self.training"

import torch.nn.functional as F


class CausalAttention(CausalAttention):
    def forward(self, x):
        n = x.shape[1]
        queries, keys, values = self.W_query(x), self.W_key(x), self.W_value(x)
        scores = (queries @ keys.transpose(1, 2)).masked_fill(self.mask.bool()[:n, :n], -torch.inf)
        w = torch.softmax(scores / keys.shape[-1] ** 0.5, dim=-1)
        return F.dropout(w, self.dropout.p) @ values
