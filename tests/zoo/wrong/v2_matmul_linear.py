"""SelfAttention_v2 multiplies by the nn.Linear module (x @ self.W_key) instead of calling it."""
MODULE = "self_attention"
LOSES = ["s2.v2.seeded", "s2.v2.known_weights", "s2.gradients"]
MENTIONS = "TypeError"


class SelfAttention_v2(SelfAttention_v2):
    def forward(self, x):
        queries = self.W_query(x)
        keys = x @ self.W_key
        values = self.W_value(x)
        attn_weights = torch.softmax(queries @ keys.transpose(-2, -1) / keys.shape[-1] ** 0.5, dim=-1)
        return attn_weights @ values
