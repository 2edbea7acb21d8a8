"""FastMultiHeadAttention with a boolean attn_mask (about 1.7 times as slow as the kit) that, on the timed
size and after the warm-up call, starts a background thread once its own output is computed; the thread
keeps the CPU and the GIL busy for a while, so that the kit's reference, timed next, would run slower and
the slow layer pass. The kit's reference runs in a child of its own while every child of the student's is
stopped: the layer is as slow as it is, and what the thread burns during the student's own calls is the
student's time."""
MODULE = "modern"
STAGES = [8]
TIMEOUT = 10
LOSES = ["s8.fast.speed"]
MENTIONS = "too slow"

import threading
import time as _time

import torch.nn.functional as F


def _burn(seconds):
    end = _time.perf_counter() + seconds
    a = torch.rand(64, 64)
    while _time.perf_counter() < end:
        a = (a @ a).clamp(-1, 1)
        sum(i * i for i in range(2000))  # holds the GIL


_calls = []


class FastMultiHeadAttention(FastMultiHeadAttention):
    def forward(self, x):
        b, n, _ = x.shape
        q, k, v = self.qkv(x).view(b, n, 3, self.num_heads, self.head_dim).permute(2, 0, 3, 1, 4)
        visible = torch.ones(n, n, dtype=torch.bool, device=x.device).tril()
        context = F.scaled_dot_product_attention(q, k, v, attn_mask=visible,
                                                 dropout_p=self.dropout_p if self.training else 0.0)
        out = self.out_proj(context.transpose(1, 2).reshape(b, n, self.d_out))
        if n == 2048:
            _calls.append(1)
            if len(_calls) > 1:  # not in the warm-up call
                threading.Thread(target=_burn, args=(0.2,), daemon=True).start()
        return out
