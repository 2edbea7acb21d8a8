"""normalize_by_sum renices its parent, the fork server, to the lowest priority and pins it to one CPU,
with libc's setpriority and sched_setaffinity, out of sight of the audit hook once native code runs:
every later grading would crawl. When an ordinary user grades, the kernel allows it."""
MODULE = "simple"
LOSES = ["s1.normalize_by_sum"]
MENTIONS = "call native code through ctypes"

import ctypes
import os

PRIO_PROCESS = 0


def normalize_by_sum(scores):
    libc = ctypes.CDLL(None, use_errno=True)
    parent, refused = os.getppid(), []
    if libc.setpriority(PRIO_PROCESS, parent, 19) == 0:
        raise RuntimeError(f"LEAKED: reniced the fork server ({parent}) to 19")
    refused.append(f"setpriority: {os.strerror(ctypes.get_errno())}")
    mask = (ctypes.c_ulong * 16)(1)  # CPU 0 alone
    if libc.sched_setaffinity(parent, ctypes.sizeof(mask), mask) == 0:
        raise RuntimeError(f"LEAKED: pinned the fork server ({parent}) to CPU 0")
    refused.append(f"sched_setaffinity: {os.strerror(ctypes.get_errno())}")
    raise RuntimeError(f"refused: {refused}")
