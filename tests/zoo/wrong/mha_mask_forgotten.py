"""MultiHeadAttention registers its causal mask but never applies it: every token sees the tokens after it. Stage
10's model runs this attention, so its end-to-end checks fail too, and say that the kit's attention in its place
passes them: the mistake is here, in stage 4."""
MODULE = "multihead"
LOSES = ["s4.mha.seeded", "s4.mha.known_weights", "s4.mha.no_leak", "s4.mha.dropout", "s10.gpt.causal", "s10.gpt.trained",
         "s10.gpt.writes"]
ONLY = True
MENTIONS = {"s4.mha.no_leak": "a token must not see the tokens after it",
            "s10.gpt.causal": "this passes: the mistake is in your MultiHeadAttention (stage 4)",
            "s10.gpt.writes": "this passes: the mistake is in your MultiHeadAttention (stage 4)"}


class MultiHeadAttention(MultiHeadAttention):
    def forward(self, x):
        b, n, _ = x.shape
        heads = lambda t: t.view(b, n, self.num_heads, self.head_dim).transpose(1, 2)
        queries, keys, values = heads(self.W_query(x)), heads(self.W_key(x)), heads(self.W_value(x))
        weights = self.dropout(torch.softmax(queries @ keys.transpose(2, 3) / self.head_dim ** 0.5, dim=-1))
        return self.out_proj((weights @ values).transpose(1, 2).reshape(b, n, self.d_out))
