"""softmax_stable holds memory in memfd files made with ``os.memfd_create``, which Python's audit hook does
not refuse: 16 MiB a file (RLIMIT_FSIZE bounds one), 1 GiB in all, none of it counted by RLIMIT_AS or the
watch on resident memory. The syscall filter refuses memfd_create; a memory cgroup would count the pages."""
MODULE = "simple"
LOSES = ["s1.softmax_stable"]
MENTIONS = "Operation not permitted"

import os


def softmax_stable(scores):
    block, held = b"x" * (16 * 2**20), []
    for _ in range(64):
        fd = os.memfd_create("held")  # raises PermissionError where it is refused
        os.write(fd, block)
        held.append(fd)
    raise RuntimeError(f"LEAKED: held {len(held) * 16} MiB in memfd files")
