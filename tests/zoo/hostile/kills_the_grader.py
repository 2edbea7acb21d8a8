"""context_vectors_all sends SIGKILL to its parent (the grader) and to the parent's process group."""
MODULE = "simple"
LOSES = ["s1.context_vectors_all"]
MENTIONS = "send a signal"

import os
import signal


def context_vectors_all(inputs):
    os.kill(os.getppid(), signal.SIGKILL)
    os.killpg(os.getpgid(os.getppid()), signal.SIGKILL)
    return inputs
