"""MultiHeadLatentAttention caches the up-projected keys and values side by side instead of the latents."""
MODULE = "frontier"
LOSES = ['s9.mla.cache']
MENTIONS = 'keys and values'
ONLY = True


class MultiHeadLatentAttention(MultiHeadLatentAttention):
    def forward(self, x, cache=None):
        b, n, _ = x.shape
        past = 0 if cache is None else cache.shape[1]
        if past + n > self.mask.shape[0]:
            raise ValueError("the cache would grow past context_length")
        latents = self.W_kv_down(x)
        both = torch.cat([self.W_key_up(latents), self.W_value_up(latents)], dim=-1)
        if cache is not None:
            both = torch.cat([cache, both], dim=1)
        heads = lambda t: t.view(b, t.shape[1], self.num_heads, self.head_dim).transpose(1, 2)
        keys, values = heads(both[..., :self.d_out]), heads(both[..., self.d_out:])
        context = _attend(heads(self.W_query(x)), keys, values, self.mask[past:past + n, :past + n], self.dropout)
        return self.out_proj(context), both
