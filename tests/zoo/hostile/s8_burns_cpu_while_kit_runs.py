"""FastMultiHeadAttention.forward, on the timed size and after the warm-up call, starts a
background thread after computing its own output; the thread keeps the CPU and the GIL busy for a
while, so that the kit's reference, timed next, would run slower. The kit's reference runs in a child
of its own, while the student's child is stopped; the thread burns on in the student's next timed
calls instead, whose time counts every thread's CPU: the layer, fast on its own, is too slow so."""
MODULE = "modern"
STAGES = [8]
TIMEOUT = 10
LOSES = ["s8.fast.speed"]
MENTIONS = "too slow"

import threading
import time as _time


def _burn(seconds):
    end = _time.perf_counter() + seconds
    a = torch.rand(64, 64)
    while _time.perf_counter() < end:
        a = (a @ a).clamp(-1, 1)
        sum(i * i for i in range(2000))  # holds the GIL


_calls = []


class FastMultiHeadAttention(FastMultiHeadAttention):
    def forward(self, x):
        out = super().forward(x)
        if x.shape[1] == 2048:
            _calls.append(1)
            if len(_calls) > 1:  # not in the warm-up call, before the grader's snapshot
                threading.Thread(target=_burn, args=(0.2,), daemon=True).start()
        return out
