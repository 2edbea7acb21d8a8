"""SlidingWindowAttention with the band from position arithmetic (arange) and the cache trimmed by negative indexing, through F.scaled_dot_product_attention; with a window of 1 it returns None for the cache, which keeps nothing just as well."""
MODULE = "frontier"


import torch.nn.functional as F


class SlidingWindowAttention(SlidingWindowAttention):
    def forward(self, x, cache=None):
        b, n, _ = x.shape
        if n > self.context_length:
            raise ValueError("one call may hold at most context_length tokens")
        split = lambda t: t.reshape(b, n, self.num_heads, -1).permute(0, 2, 1, 3)
        q, k, v = split(self.W_query(x)), split(self.W_key(x)), split(self.W_value(x))
        if cache is not None:
            k, v = torch.cat([cache[0], k], 2), torch.cat([cache[1], v], 2)
        total = k.shape[2]
        query_pos = torch.arange(total - n, total, device=x.device)[:, None]
        key_pos = torch.arange(total, device=x.device)[None, :]
        allowed = (key_pos <= query_pos) & (key_pos > query_pos - self.window)
        out = F.scaled_dot_product_attention(q, k, v, attn_mask=allowed,
                                             dropout_p=self.dropout.p if self.training else 0.0)
        keep = min(self.window - 1, total)
        new_cache = (k[:, :, total - keep:], v[:, :, total - keep:])
        return self.out_proj(out.permute(0, 2, 1, 3).reshape(b, n, self.d_out)), new_cache


class SlidingWindowAttention(SlidingWindowAttention):
    def forward(self, x, cache=None):
        out, kept = super().forward(x, cache)
        return out, (None if self.window == 1 else kept)  # a window of 1 keeps nothing: no cache at all
