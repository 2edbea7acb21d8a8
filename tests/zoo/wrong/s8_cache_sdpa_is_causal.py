"""GroupedQueryAttention on F.scaled_dot_product_attention(..., is_causal=True) with a cache: with fewer queries than keys PyTorch aligns the causal mask top-left, so new tokens miss most of the cache."""
MODULE = "modern"
LOSES = ["s8.cache.incremental", "s8.cache.pieces", "s8.cache.reset"]
MENTIONS = "one token at a time"
ONLY = True

import torch.nn.functional as F


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
        context = F.scaled_dot_product_attention(queries, repeat_kv(keys, groups), repeat_kv(values, groups),
                                                 is_causal=True, dropout_p=self.dropout.p if self.training else 0.0)
        return self.out_proj(context.transpose(1, 2).reshape(b, n, self.d_out)), (keys, values)
