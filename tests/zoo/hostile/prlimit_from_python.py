"""softmax_naive lowers its parent's limits (the fork server's) with ``resource.prlimit``, which Python's
audit hook does not refuse: RLIMIT_NPROC to 1, so that no later child could start. When an ordinary user
grades, the fork server is that user's and the kernel allows it; the syscall filter refuses prlimit64 on
any process but the caller; and in the PID namespace the fork server makes, the server has no pid to aim
at (getppid() says 0). The reference graded next by the same server must get full marks."""
MODULE = "simple"
LOSES = ["s1.softmax_naive"]
MENTIONS = ("Operation not permitted", "no pid here")  # the filter's refusal where there is no PID namespace

import os
import resource


def softmax_naive(scores):
    parent = os.getppid()
    if parent == 0:
        raise RuntimeError("the fork server has no pid here: it is outside this PID namespace")
    resource.prlimit(parent, resource.RLIMIT_NPROC, (1, 1))  # raises PermissionError where it is refused
    raise RuntimeError(f"LEAKED: lowered the fork server's ({parent}) process limit to 1")
