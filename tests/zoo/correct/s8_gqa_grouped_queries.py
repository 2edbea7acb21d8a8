"""GroupedQueryAttention never repeats keys/values: it views the queries as (b, num_kv_heads, groups, n, head_dim) and lets each key/value head broadcast over its group."""
MODULE = "modern"


class GroupedQueryAttention(GroupedQueryAttention):
    def forward(self, x, cache=None):
        b, n, _ = x.shape
        past = 0 if cache is None else cache[0].shape[2]
        if past + n > self.mask.shape[0]:
            raise ValueError(f"the cache would hold {past + n} tokens, more than context_length {self.mask.shape[0]}")
        groups = self.num_heads // self.num_kv_heads
        queries = self.W_query(x).view(b, n, self.num_kv_heads, groups, self.head_dim).permute(0, 2, 3, 1, 4)
        keys = self.W_key(x).view(b, n, self.num_kv_heads, self.head_dim).transpose(1, 2)
        values = self.W_value(x).view(b, n, self.num_kv_heads, self.head_dim).transpose(1, 2)
        if cache is not None:
            keys = torch.cat((cache[0], keys), dim=-2)
            values = torch.cat((cache[1], values), dim=-2)
        scores = queries @ keys.unsqueeze(2).transpose(-1, -2) / self.head_dim ** 0.5  # (b, kv, groups, n, past + n)
        scores = scores.masked_fill(self.mask[past:past + n, :past + n], float("-inf"))
        weights = self.dropout(scores.softmax(dim=-1))
        context = weights @ values.unsqueeze(2)  # (b, kv, groups, n, head_dim)
        return self.out_proj(context.permute(0, 3, 1, 2, 4).reshape(b, n, self.d_out)), (keys, values)
