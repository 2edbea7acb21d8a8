"""GroupedQueryAttention slices the mask as mask[:n, :past + n] (top-left): after a cache, the new tokens see only the first cached tokens."""
MODULE = "modern"
LOSES = ["s8.cache.incremental", "s8.cache.pieces", "s8.cache.reset", "s10.cached.model", "s10.gpt.writes"]
MENTIONS = {"s8.cache.incremental": "one token at a time",
            # stage 10's cached model runs this attention: its end-to-end checks name it as the cause
            "s10.cached.model": "this passes: the mistake is in your GroupedQueryAttention (stage 8)",
            "s10.gpt.writes": "this passes: the mistake is in your GroupedQueryAttention (stage 8)"}
ONLY = True


class GroupedQueryAttention(GroupedQueryAttention):
    def forward(self, x, cache=None):
        b, n, _ = x.shape
        past = 0 if cache is None else cache[0].shape[2]
        if past + n > self.mask.shape[0]:
            raise ValueError(f"{past} cached + {n} new tokens exceed context_length ({self.mask.shape[0]})")
        heads = lambda t, count: t.view(b, n, count, self.head_dim).transpose(1, 2)
        queries = heads(self.W_query(x), self.num_heads)
        keys = heads(self.W_key(x), self.num_kv_heads)
        values = heads(self.W_value(x), self.num_kv_heads)
        if cache is not None:
            keys = torch.cat([cache[0], keys], dim=2)
            values = torch.cat([cache[1], values], dim=2)
        groups = self.num_heads // self.num_kv_heads
        scores = queries @ repeat_kv(keys, groups).transpose(2, 3) / self.head_dim ** 0.5
        scores = scores.masked_fill(self.mask[:n, :past + n], -torch.inf)
        weights = self.dropout(torch.softmax(scores, dim=-1))
        context = (weights @ repeat_kv(values, groups)).transpose(1, 2).reshape(b, n, self.d_out)
        return self.out_proj(context), (keys, values)
