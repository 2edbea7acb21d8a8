"""FastMultiHeadAttention.forward, on the timed size, leaves a TorchFunctionMode pushed when it
returns (and pops it at its next call), so every torch call of the kit's reference, timed in
between, goes through the mode and a slow Python hook."""
MODULE = "modern"
STAGES = [8]
TIMEOUT = 10
LOSES = ["s8.fast.speed"]
MENTIONS = "TorchFunctionMode"

import time as _time

from torch.overrides import TorchFunctionMode


class Slow(TorchFunctionMode):
    def __torch_function__(self, func, types, args=(), kwargs=None):
        end = _time.perf_counter() + 0.01
        while _time.perf_counter() < end:
            pass
        return func(*args, **(kwargs or {}))


_pushed = []


class FastMultiHeadAttention(FastMultiHeadAttention):
    def forward(self, x):
        while _pushed:
            _pushed.pop().__exit__(None, None, None)
        out = super().forward(x)
        if x.shape[1] == 2048:
            mode = Slow()
            mode.__enter__()
            _pushed.append(mode)
        return out
