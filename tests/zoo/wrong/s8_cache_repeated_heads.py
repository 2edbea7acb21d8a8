"""GroupedQueryAttention repeats the new keys/values to num_heads heads before caching them: right outputs, but a cache as large as multi-head attention's."""
MODULE = "modern"
LOSES = ["s8.cache.heads"]
MENTIONS = "the keys were repeated before caching"
ONLY = True


class GroupedQueryAttention(GroupedQueryAttention):
    def forward(self, x, cache=None):
        b, n, _ = x.shape
        past = 0 if cache is None else cache[0].shape[2]
        if past + n > self.mask.shape[0]:
            raise ValueError(f"{past} cached + {n} new tokens exceed context_length ({self.mask.shape[0]})")
        heads = lambda t, count: t.view(b, n, count, self.head_dim).transpose(1, 2)
        groups = self.num_heads // self.num_kv_heads
        queries = heads(self.W_query(x), self.num_heads)
        keys = repeat_kv(heads(self.W_key(x), self.num_kv_heads), groups)
        values = repeat_kv(heads(self.W_value(x), self.num_kv_heads), groups)
        if cache is not None:
            keys = torch.cat([cache[0], keys], dim=2)
            values = torch.cat([cache[1], values], dim=2)
        scores = queries @ keys.transpose(2, 3) / self.head_dim ** 0.5
        scores = scores.masked_fill(self.mask[past:past + n, :past + n], -torch.inf)
        weights = self.dropout(torch.softmax(scores, dim=-1))
        context = (weights @ values).transpose(1, 2).reshape(b, n, self.d_out)
        return self.out_proj(context), (keys, values)
