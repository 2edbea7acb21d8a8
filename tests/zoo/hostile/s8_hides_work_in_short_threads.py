"""FastMultiHeadAttention that does half as much work again, in a thread it starts and joins within each
forward call: a thread that is not there when the call starts nor when it ends shows in no reading of the
child's threads, and a process's own total counts only whole clock ticks (10 ms), so about 20 ms a call once
went uncounted and the layer, 1.5 times the kit's work, was timed at 1.02. The race reads the CPU of the
child's cgroup, every task of it, ended ones too."""
MODULE = "modern"
STAGES = [8]
TIMEOUT = 10
LOSES = ["s8.fast.speed"]
MENTIONS = "too slow"

import threading


class FastMultiHeadAttention(FastMultiHeadAttention):
    def forward(self, x):
        if x.shape[1] != 2048:
            return super().forward(x)
        helper = threading.Thread(target=lambda: super(FastMultiHeadAttention, self).forward(x[:, :1500]))
        helper.start()
        out = super().forward(x)
        helper.join()
        return out
