"""softmax_stable holds 64 MiB in a memfd (libc's memfd_create and fallocate, out of the audit hook's
sight once native code runs): a file's pages, which RLIMIT_AS never counts. Repeated, 6 GiB held this
way escaped the child's memory limit."""
MODULE = "simple"
LOSES = ["s1.softmax_stable"]
MENTIONS = "call native code through ctypes"

import ctypes
import os

SIZE = 64 * 2**20


def softmax_stable(scores):
    libc = ctypes.CDLL(None, use_errno=True)
    fd = libc.memfd_create(b"outside-the-limit", 0)
    if fd < 0:
        raise RuntimeError(f"memfd_create was refused: {os.strerror(ctypes.get_errno())}")
    if libc.fallocate(fd, 0, ctypes.c_long(0), ctypes.c_long(SIZE)) == 0:
        raise RuntimeError(f"LEAKED: holds {SIZE >> 20} MiB in a memfd, outside RLIMIT_AS")
    raise RuntimeError(f"fallocate was refused: {os.strerror(ctypes.get_errno())}")
