"""softmax_naive lowers the limits of its parent, the fork server, with libc's prlimit, which no audit
hook sees once native code runs: RLIMIT_NPROC to 0 and RLIMIT_AS to 64 MiB, so that no later child
could start. When an ordinary user grades, the fork server is that user's, and the kernel allows it."""
MODULE = "simple"
LOSES = ["s1.softmax_naive"]
MENTIONS = "call native code through ctypes"

import ctypes
import os

RLIMIT_NPROC, RLIMIT_AS = 6, 9


def softmax_naive(scores):
    libc = ctypes.CDLL(None, use_errno=True)
    parent, refused = os.getppid(), []
    for which, value in ((RLIMIT_NPROC, 0), (RLIMIT_AS, 64 * 2**20)):
        limit = (ctypes.c_uint64 * 2)(value, value)  # struct rlimit: soft, hard
        if libc.prlimit(parent, which, limit, None) == 0:
            raise RuntimeError(f"LEAKED: lowered limit {which} of the fork server ({parent}) to {value}")
        refused.append(os.strerror(ctypes.get_errno()))
    raise RuntimeError(f"prlimit on the fork server was refused: {refused}")
