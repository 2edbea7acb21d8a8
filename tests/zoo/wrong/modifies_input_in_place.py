"""CausalAttention scales its input in place (x /= d_k ** 0.25, meant for queries and keys), which changes the caller's x."""
MODULE = "causal"
LOSES = ["s3.causal.shapes", "s3.causal.known_weights"]
MENTIONS = "modified its input"


class CausalAttention(CausalAttention):
    def forward(self, x):
        n = x.shape[1]
        x /= self.d_out ** 0.25
        queries, keys, values = self.W_query(x), self.W_key(x), self.W_value(x)
        scores = (queries @ keys.transpose(1, 2)).masked_fill(self.mask.bool()[:n, :n], -torch.inf)
        return self.dropout(torch.softmax(scores, dim=-1)) @ values
