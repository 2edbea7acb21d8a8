"""FastMultiHeadAttention.forward ends the process on every input but the speed race's 2048 tokens. Its
checks crash, and after two of them the grader calls it no more: the race, run in a child of its own
where the machine allows, is not run either, exactly as in one child (it once earned its 4 points there)."""
MODULE = "modern"
LOSES = ["s8.fast.speed", "s8.fast.known_weights"]
MENTIONS = "crashed or hung 2 times already"

import os as _os

_fast_forward = FastMultiHeadAttention.forward


def _forward(self, x):
    if x.shape[1] != 2048:
        _os._exit(3)
    return _fast_forward(self, x)


FastMultiHeadAttention.forward = _forward
