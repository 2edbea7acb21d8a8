"""GroupedQueryAttention takes rows past+1.. of the mask for tokens after a cache: one token at a time still works, but a chunk of several tokens lets each see the next one.
At the exact edge of the context (6 cached + 4 new in 10) the rows run out and it crashes, which the context check
says too: the same slip, met at the edge."""
MODULE = "modern"
LOSES = ["s8.cache.pieces", "s8.cache.context_limit"]
MENTIONS = "in pieces of 3, 2, 1, 1 tokens"
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
        if cache is None:
            mask = self.mask[:n, :n]
        else:
            keys = torch.cat([cache[0], keys], dim=2)
            values = torch.cat([cache[1], values], dim=2)
            mask = self.mask[past + 1:past + 1 + n, :past + n]
        groups = self.num_heads // self.num_kv_heads
        scores = queries @ repeat_kv(keys, groups).transpose(2, 3) / self.head_dim ** 0.5
        weights = self.dropout(torch.softmax(scores.masked_fill(mask, -torch.inf), dim=-1))
        context = (weights @ repeat_kv(values, groups)).transpose(1, 2).reshape(b, n, self.d_out)
        return self.out_proj(context), (keys, values)
