"""MultiHeadLatentAttention divides the scores by head_dim ** 2 (the seed notes' MHA bug, carried into latent attention)."""
MODULE = "frontier"
LOSES = ['s9.mla.as_mha', 's9.mla.incremental']


class MultiHeadLatentAttention(MultiHeadLatentAttention):
    def forward(self, x, cache=None):
        b, n, _ = x.shape
        past = 0 if cache is None else cache.shape[1]
        if past + n > self.mask.shape[0]:
            raise ValueError("the cache would grow past context_length")
        latents = self.W_kv_down(x)
        if cache is not None:
            latents = torch.cat([cache, latents], dim=1)
        heads = lambda t: t.view(b, t.shape[1], self.num_heads, self.head_dim).transpose(1, 2)
        queries, keys, values = heads(self.W_query(x)), heads(self.W_key_up(latents)), heads(self.W_value_up(latents))
        scores = queries @ keys.transpose(2, 3) / self.head_dim ** 2
        scores = scores.masked_fill(self.mask[past:past + n, :past + n], -torch.inf)
        weights = self.dropout(torch.softmax(scores, dim=-1))
        context = (weights @ values).transpose(1, 2).reshape(b, n, self.d_out)
        return self.out_proj(context), latents
