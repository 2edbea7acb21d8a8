"""CausalAttention forgets the 1/sqrt(d_k) scaling of the scores."""
MODULE = "causal"
LOSES = ["s3.causal.known_weights", "s3.causal.seeded"]


class CausalAttention(CausalAttention):
    def forward(self, x):
        n = x.shape[1]
        queries, keys, values = self.W_query(x), self.W_key(x), self.W_value(x)
        scores = (queries @ keys.transpose(1, 2)).masked_fill(self.mask.bool()[:n, :n], -torch.inf)
        return self.dropout(torch.softmax(scores, dim=-1)) @ values
