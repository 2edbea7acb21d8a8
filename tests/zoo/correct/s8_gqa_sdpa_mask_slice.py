"""GroupedQueryAttention on F.scaled_dot_product_attention with attn_mask = the visible part of the mask's rows past..past+n-1, and enable_gqa=True instead of repeat_kv."""
MODULE = "modern"

import torch.nn.functional as F


class GroupedQueryAttention(GroupedQueryAttention):
    def forward(self, x, cache=None):
        b, n, _ = x.shape
        past = 0 if cache is None else cache[0].shape[2]
        if past + n > self.mask.shape[0]:
            raise ValueError(f"{past} cached + {n} new tokens exceed context_length ({self.mask.shape[0]})")
        heads = lambda t: t.unflatten(-1, (-1, self.head_dim)).transpose(1, 2)
        queries, keys, values = heads(self.W_query(x)), heads(self.W_key(x)), heads(self.W_value(x))
        if cache is not None:
            keys, values = torch.cat([cache[0], keys], 2), torch.cat([cache[1], values], 2)
        context = F.scaled_dot_product_attention(queries, keys, values, attn_mask=~self.mask[past:past + n, :past + n],
                                                 dropout_p=self.dropout.p if self.training else 0.0, enable_gqa=True)
        return self.out_proj(context.transpose(1, 2).flatten(2)), (keys, values)
