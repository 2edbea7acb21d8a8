"""RopeGroupedQueryAttention whose own context check counts only the new tokens, not the cached ones. It is still
correct: the rotary tables have context_length rows, so apply_rope raises ValueError for every call that a check
counting the cache would refuse (6 cached + 5 new in a context of 10 are rotated at positions 6..10). The mutation
run finds this mutant equivalent (docs/checks.md), and this entry pins that it keeps full marks."""
MODULE = "frontier"


class RopeGroupedQueryAttention(RopeGroupedQueryAttention):
    def forward(self, x, cache=None):
        if x.shape[1] > self.mask.shape[0]:  # the cached tokens are left to apply_rope's bound
            raise ValueError(f"{x.shape[1]} new tokens exceed context_length ({self.mask.shape[0]})")
        b, n, _ = x.shape
        past = 0 if cache is None else cache[0].shape[2]

        def heads(t, count):
            return t.view(b, n, count, self.head_dim).transpose(1, 2)

        queries = apply_rope(heads(self.W_query(x), self.num_heads), self.cos, self.sin, past)
        keys = apply_rope(heads(self.W_key(x), self.num_kv_heads), self.cos, self.sin, past)
        values = heads(self.W_value(x), self.num_kv_heads)
        if cache is not None:
            keys, values = torch.cat([cache[0], keys], dim=2), torch.cat([cache[1], values], dim=2)
        groups = self.num_heads // self.num_kv_heads
        scores = queries @ repeat_kv(keys, groups).transpose(2, 3) / self.head_dim ** 0.5
        scores = scores.masked_fill(self.mask[past:past + n, :past + n], -torch.inf)
        weights = self.dropout(torch.softmax(scores, dim=-1))
        context = (weights @ repeat_kv(values, groups)).transpose(1, 2).reshape(b, n, self.d_out)
        return self.out_proj(context), (keys, values)
