"""SlidingWindowAttention builds its band with torch.ones(n, m) and no device: right numbers on the CPU, a forward that cannot run once the layer is moved to a GPU."""
MODULE = "frontier"
LOSES = ["s9.devices"]
MENTIONS = "device=x.device"
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
        band = torch.ones(n, kept + n).tril(kept).triu(kept - self.window + 1).bool()
        context = _attend(queries, keys, values, ~band, self.dropout)
        keep = max(0, min(self.window - 1, kept + n))
        return self.out_proj(context), (keys[:, :, kept + n - keep:], values[:, :, kept + n - keep:])
