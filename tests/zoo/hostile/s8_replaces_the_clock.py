"""FastMultiHeadAttention about twice as slow as the kit's (a boolean attn_mask instead of is_causal,
and its projection computed twice) that replaces every clock of the time module with one that runs ten
times slower, so that its calls, timed in its own process, would look ten times as fast. The grader
times each call from outside the child, by what the kernel counted: the layer is as slow as it is."""
MODULE = "modern"
STAGES = [8]
TIMEOUT = 10
LOSES = ["s8.fast.speed"]
MENTIONS = "too slow"

import time as _time

import torch.nn.functional as F

for _name in ("perf_counter", "process_time", "monotonic", "thread_time", "time"):
    _real = getattr(_time, _name)
    _start = _real()
    setattr(_time, _name, lambda _real=_real, _start=_start: _start + (_real() - _start) / 10)


class FastMultiHeadAttention(FastMultiHeadAttention):
    def forward(self, x):
        b, n, _ = x.shape
        self.qkv(x)
        q, k, v = self.qkv(x).view(b, n, 3, self.num_heads, self.head_dim).permute(2, 0, 3, 1, 4)
        visible = torch.ones(n, n, dtype=torch.bool, device=x.device).tril()
        context = F.scaled_dot_product_attention(q, k, v, attn_mask=visible,
                                                 dropout_p=self.dropout_p if self.training else 0.0)
        return self.out_proj(context.transpose(1, 2).reshape(b, n, self.d_out))
