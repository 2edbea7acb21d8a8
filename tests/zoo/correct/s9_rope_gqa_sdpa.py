"""RopeGroupedQueryAttention through F.scaled_dot_product_attention with a boolean mask of the keys each query sees."""
MODULE = "frontier"


import torch.nn.functional as F


class RopeGroupedQueryAttention(RopeGroupedQueryAttention):
    def forward(self, x, cache=None):
        b, n, _ = x.shape
        past = 0 if cache is None else cache[0].shape[-2]
        if past + n > self.cos.shape[0]:
            raise ValueError("context_length exceeded")
        q = self.W_query(x).unflatten(-1, (self.num_heads, self.head_dim)).transpose(1, 2)
        k = self.W_key(x).unflatten(-1, (self.num_kv_heads, self.head_dim)).transpose(1, 2)
        v = self.W_value(x).unflatten(-1, (self.num_kv_heads, self.head_dim)).transpose(1, 2)
        q, k = apply_rope(q, self.cos, self.sin, offset=past), apply_rope(k, self.cos, self.sin, offset=past)
        if cache is not None:
            k, v = torch.cat((cache[0], k), -2), torch.cat((cache[1], v), -2)
        g = self.num_heads // self.num_kv_heads
        visible = ~self.mask[past:past + n, :past + n]
        out = F.scaled_dot_product_attention(q, k.repeat_interleave(g, 1), v.repeat_interleave(g, 1),
                                             attn_mask=visible, dropout_p=self.dropout.p if self.training else 0.0)
        return self.out_proj(out.transpose(1, 2).flatten(2)), (k, v)
