"""MultiHeadSelfAttention with reshape instead of view, einsum for both products and the heads merged with flatten(2)."""
MODULE = "practical"


class MultiHeadSelfAttention(MultiHeadSelfAttention):
    def forward(self, x, attention_mask=None):
        batch, seq, _ = x.shape

        def heads(t):
            return t.reshape(batch, seq, self.num_heads, self.head_dim)

        queries, keys, values = heads(self.q_proj(x)), heads(self.k_proj(x)), heads(self.v_proj(x))
        scores = torch.einsum("bqhd,bkhd->bhqk", queries, keys) / self.head_dim ** 0.5
        weights = self.attention_dropout(masked_softmax(scores, attention_mask))
        context = torch.einsum("bhqk,bkhd->bqhd", weights, values).flatten(2)
        return self.o_proj(context)
