"""SlidingWindowAttention lets each token see window + 1 tokens (the band starts one too early)."""
MODULE = "frontier"
LOSES = ['s9.swa.band']
MENTIONS = 'older keys must be hidden'


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
        seen = torch.ones(n, kept + n, dtype=torch.bool, device=x.device)
        seen = seen.tril(kept).triu(kept - self.window)
        context = _attend(queries, keys, values, ~seen, self.dropout)
        keep = max(0, min(self.window - 1, kept + n))
        return self.out_proj(context), (keys[:, :, kept + n - keep:], values[:, :, kept + n - keep:])
