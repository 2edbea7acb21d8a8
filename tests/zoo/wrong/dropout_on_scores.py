"""Dropout before the softmax, on the masked scores: a dropped -inf becomes nan (-inf * 0), at random
places: the feedback names dropout before the softmax, not the mask."""
MODULE = "causal"
LOSES = ["s3.causal.dropout"]
MENTIONS = "dropout acts before the softmax"


class CausalAttention(CausalAttention):
    def forward(self, x):
        n = x.shape[1]
        queries, keys, values = self.W_query(x), self.W_key(x), self.W_value(x)
        scores = (queries @ keys.transpose(1, 2)).masked_fill(self.mask.bool()[:n, :n], -torch.inf)
        scores = self.dropout(scores)
        return torch.softmax(scores / keys.shape[-1] ** 0.5, dim=-1) @ values
