"""GroupedQueryAttention returns its cache as a NamedTuple KVCache(keys, values) and reads it by field name."""
MODULE = "modern"

from typing import NamedTuple


class KVCache(NamedTuple):
    keys: torch.Tensor
    values: torch.Tensor


class GroupedQueryAttention(GroupedQueryAttention):
    def forward(self, x, cache=None):
        b, n, _ = x.shape
        past = 0 if cache is None else cache.keys.shape[2]
        if past + n > self.mask.shape[0]:
            raise ValueError(f"{past} cached + {n} new tokens exceed context_length ({self.mask.shape[0]})")
        queries = self.W_query(x).view(b, n, self.num_heads, self.head_dim).transpose(1, 2)
        keys = self.W_key(x).view(b, n, self.num_kv_heads, self.head_dim).transpose(1, 2)
        values = self.W_value(x).view(b, n, self.num_kv_heads, self.head_dim).transpose(1, 2)
        if cache is not None:
            keys = torch.cat([cache.keys, keys], dim=2)
            values = torch.cat([cache.values, values], dim=2)
        new_cache = KVCache(keys, values)
        groups = self.num_heads // self.num_kv_heads
        scores = queries @ repeat_kv(keys, groups).transpose(2, 3) / self.head_dim ** 0.5
        scores = scores.masked_fill(self.mask[past:past + n, :past + n], -torch.inf)
        weights = self.dropout(torch.softmax(scores, dim=-1))
        context = (weights @ repeat_kv(values, groups)).transpose(1, 2).contiguous().view(b, n, self.d_out)
        return self.out_proj(context), new_cache
