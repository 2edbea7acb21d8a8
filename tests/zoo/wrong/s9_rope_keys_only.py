"""RopeGroupedQueryAttention rotates the keys but not the queries. Decoding with the cache must not blame the
cache's offset (position 0 is right whatever RoPE does): the layer's full forward is already wrong."""
MODULE = "frontier"
LOSES = ['s9.ropegqa.cache', 's9.ropegqa.known']
MENTIONS = "full forward is wrong too"


class RopeGroupedQueryAttention(RopeGroupedQueryAttention):
    def forward(self, x, cache=None):
        b, n, _ = x.shape
        past = 0 if cache is None else cache[0].shape[2]
        if past + n > self.mask.shape[0]:
            raise ValueError("the cache would grow past context_length")
        heads = lambda t, count: t.view(b, n, count, self.head_dim).transpose(1, 2)
        queries = heads(self.W_query(x), self.num_heads)
        keys = apply_rope(heads(self.W_key(x), self.num_kv_heads), self.cos, self.sin, past)
        values = heads(self.W_value(x), self.num_kv_heads)
        if cache is not None:
            keys = torch.cat([cache[0], keys], dim=2)
            values = torch.cat([cache[1], values], dim=2)
        context = _attend(queries, keys, values, self.mask[past:past + n, :past + n], self.dropout)
        return self.out_proj(context), (keys, values)
