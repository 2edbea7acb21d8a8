"""SlidingWindowAttention trims its cache with t[:, :, -(window - 1):], which with window 1 is t[:, :, -0:], the whole tensor: right outputs (the band still hides the old keys), a cache that grows without bound."""
MODULE = "frontier"
LOSES = ["s9.swa.cache"]
MENTIONS = "-0:"
ONLY = True


class SlidingWindowAttention(SlidingWindowAttention):
    def forward(self, x, cache=None):
        b, n, _ = x.shape
        if n > self.context_length:
            raise ValueError("too many tokens in one call")
        heads = lambda t: t.view(b, n, self.num_heads, self.head_dim).transpose(1, 2)
        queries, keys, values = heads(self.W_query(x)), heads(self.W_key(x)), heads(self.W_value(x))
        kept = 0 if cache is None else cache[0].shape[2]
        if cache is not None:
            keys = torch.cat([cache[0], keys], dim=2)
            values = torch.cat([cache[1], values], dim=2)
        band = torch.ones(n, kept + n, dtype=torch.bool, device=x.device).tril(kept).triu(kept - self.window + 1)
        context = _attend(queries, keys, values, ~band, self.dropout)
        return self.out_proj(context), (keys[:, :, -(self.window - 1):], values[:, :, -(self.window - 1):])
