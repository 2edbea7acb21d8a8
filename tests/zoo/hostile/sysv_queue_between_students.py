"""context_vector reads a SysV message queue with a key every grading knows, through libc's msgget and
msgrcv (native code, out of the audit hook's sight), and leaves a message there for the next student:
without an IPC namespace and a filter, the queue lives in the kernel after grading and the next
grading reads it."""
MODULE = "simple"
LOSES = ["s1.context_vector"]
MENTIONS = "call native code through ctypes"

import ctypes
import os

KEY = 0x41544C42  # the same in every grading
IPC_CREAT, IPC_NOWAIT = 0o1000, 0o4000


class Message(ctypes.Structure):
    _fields_ = [("mtype", ctypes.c_long), ("mtext", ctypes.c_char * 64)]


def context_vector(inputs, weights):
    libc = ctypes.CDLL(None, use_errno=True)
    queue = libc.msgget(KEY, IPC_CREAT | 0o666)
    if queue < 0:
        raise RuntimeError(f"msgget was refused: {os.strerror(ctypes.get_errno())}")
    mine, got = f"from grading child {os.getpid()}".encode(), Message()
    while libc.msgrcv(queue, ctypes.byref(got), 64, 0, IPC_NOWAIT) >= 0:
        if got.mtext != mine:
            raise RuntimeError(f"LEAKED: read {got.mtext!r}, left by an earlier grading")
    libc.msgsnd(queue, ctypes.byref(Message(1, mine)), 64, IPC_NOWAIT)
    raise RuntimeError("left a message for the next student")
