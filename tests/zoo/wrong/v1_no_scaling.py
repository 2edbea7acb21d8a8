"""SelfAttention_v1 forgets the 1/sqrt(d_k) scaling before the softmax."""
MODULE = "self_attention"
LOSES = ["s2.v1.seeded", "s2.v1.known_weights"]


class SelfAttention_v1(SelfAttention_v1):
    def forward(self, x):
        queries, keys, values = x @ self.W_query, x @ self.W_key, x @ self.W_value
        return torch.softmax(queries @ keys.T, dim=-1) @ values
