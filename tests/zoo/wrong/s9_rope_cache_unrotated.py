"""RopeGroupedQueryAttention caches the keys before rotating them and rotates all of them from position 0 at every call: right outputs, but the cache does not hold rotated keys and every step rotates the whole past again."""
MODULE = "frontier"
LOSES = ['s9.ropegqa.cache']
MENTIONS = 'before the rotation'
ONLY = True


class RopeGroupedQueryAttention(RopeGroupedQueryAttention):
    def forward(self, x, cache=None):
        b, n, _ = x.shape
        past = 0 if cache is None else cache[0].shape[2]
        if past + n > self.mask.shape[0]:
            raise ValueError("the cache would grow past context_length")
        heads = lambda t, count: t.view(b, n, count, self.head_dim).transpose(1, 2)
        queries = apply_rope(heads(self.W_query(x), self.num_heads), self.cos, self.sin, past)
        keys = heads(self.W_key(x), self.num_kv_heads)
        values = heads(self.W_value(x), self.num_kv_heads)
        if cache is not None:
            keys = torch.cat([cache[0], keys], dim=2)
            values = torch.cat([cache[1], values], dim=2)
        context = _attend(queries, apply_rope(keys, self.cos, self.sin), values, self.mask[past:past + n, :past + n],
                          self.dropout)
        return self.out_proj(context), (keys, values)
