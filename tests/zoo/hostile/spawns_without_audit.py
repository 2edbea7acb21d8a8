"""softmax_naive reaches for _posixsubprocess.fork_exec, which starts a process without raising
the audit event that subprocess.Popen raises."""
MODULE = "simple"
LOSES = ["s1.softmax_naive"]
MENTIONS = "start another process"

import sys


def softmax_naive(scores):
    spawner = sys.modules.get("_posixsubprocess")
    if spawner is None:
        import _posixsubprocess as spawner
    raise RuntimeError(f"LEAKED: got {spawner.fork_exec}")
