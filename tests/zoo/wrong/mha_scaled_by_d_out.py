"""MultiHeadAttention scales the scores by sqrt(d_out) instead of sqrt(head_dim)."""
MODULE = "multihead"
LOSES = ["s4.mha.known_weights", "s4.mha.seeded", "s10.gpt.trained", "s10.gpt.writes"]
# stage 10's model runs this attention: its end-to-end checks name it as the cause
MENTIONS = {"s10.gpt.trained": "this passes: the mistake is in your MultiHeadAttention (stage 4)",
            "s10.gpt.writes": "this passes: the mistake is in your MultiHeadAttention (stage 4)"}


class MultiHeadAttention(MultiHeadAttention):
    def forward(self, x):
        b, n, _ = x.shape
        split = lambda t: t.view(b, n, self.num_heads, self.head_dim).transpose(1, 2)
        queries, keys, values = split(self.W_query(x)), split(self.W_key(x)), split(self.W_value(x))
        scores = (queries @ keys.transpose(2, 3)).masked_fill(self.mask.bool()[:n, :n], -torch.inf)
        weights = self.dropout(torch.softmax(scores / self.d_out ** 0.5, dim=-1))
        return self.out_proj((weights @ values).transpose(1, 2).contiguous().view(b, n, self.d_out))
