"""FastMultiHeadAttention with a boolean attn_mask (about 1.7 times as slow as the kit) that, on
its first call of the timed size (the warm-up), starts a thread that holds the GIL whenever the
student's forward is not running, so that the kit's reference, were it timed in the same process,
would wait for the GIL after every torch op. It runs in a child of its own, while the student's is
stopped: the layer is as slow as it is, and the thread's CPU counts as its own."""
MODULE = "modern"
STAGES = [8]
TIMEOUT = 10
LOSES = ["s8.fast.speed"]
MENTIONS = "too slow"

import threading
import time as _time

import torch.nn.functional as F

_state = {"busy": False, "calls": 0, "thread": None}


def _hog():
    while True:  # never ends: the number of running threads stays what the guard saw
        if _state["busy"] or _state["calls"] >= 10:
            _time.sleep(0.0002)
            continue
        x = 0
        for i in range(20000):  # pure Python: holds the GIL for its switch interval
            x += i


class FastMultiHeadAttention(FastMultiHeadAttention):
    def forward(self, x):
        _state["busy"] = True
        try:
            b, n, _ = x.shape
            q, k, v = self.qkv(x).view(b, n, 3, self.num_heads, self.head_dim).permute(2, 0, 3, 1, 4)
            visible = torch.ones(n, n, dtype=torch.bool, device=x.device).tril()
            context = F.scaled_dot_product_attention(q, k, v, attn_mask=visible,
                                                     dropout_p=self.dropout_p if self.training else 0.0)
            return self.out_proj(context.transpose(1, 2).reshape(b, n, self.d_out))
        finally:
            if n == 2048:
                _state["calls"] += 1
                if _state["thread"] is None:
                    _state["thread"] = threading.Thread(target=_hog, daemon=True)
                    _state["thread"].start()
            _state["busy"] = False
