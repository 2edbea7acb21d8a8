"""CausalAttention uses the whole context_length x context_length mask instead of its num_tokens corner."""
MODULE = "causal"
LOSES = ["s3.causal.known_weights", "s3.causal.shapes"]


class CausalAttention(CausalAttention):
    def forward(self, x):
        queries, keys, values = self.W_query(x), self.W_key(x), self.W_value(x)
        scores = (queries @ keys.transpose(1, 2)).masked_fill(self.mask.bool(), -torch.inf)
        return self.dropout(torch.softmax(scores / keys.shape[-1] ** 0.5, dim=-1)) @ values
