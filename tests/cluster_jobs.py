"""What a Dask worker runs in the fault tests of tests/test_cluster.py: the kit's own ``grade_job``, with a
fault planted for one student. Module-level functions (given their arguments with ``functools.partial``),
so that a worker process imports them by name, as it imports the kit's."""
from __future__ import annotations

import json
import os
from pathlib import Path

from autograder.delivery.classrun.worker import grade_job


def dies_once(marks: str, student: str, job):
    """The worker grading ``student`` dies (``os._exit``) on its first try at it, and grades it after that:
    a node lost mid-class. ``marks``: a folder the workers share, where the first try is remembered."""
    mark = Path(marks) / f"{job.student}.tried"
    if job.student == student and not mark.exists():
        mark.touch()
        (Path(marks) / "servers.json").write_text(json.dumps(fork_servers(os.getpid())))
        os._exit(1)
    return grade_job(job)


def fork_servers(parent: int) -> list[int]:
    """The kit's fork servers that ``parent`` started (each thread's warm one): what must die with it."""
    found = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            ppid = int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])
            cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
        except (OSError, IndexError, ValueError):
            continue
        if ppid == parent and b"autograder.sandbox.server" in cmdline:
            found.append(int(pid))
    return found


def always_dies(student: str, job):
    """A submission that kills whichever worker grades it, every time."""
    if job.student == student:
        os._exit(1)
    return grade_job(job)


def unconfined() -> None:
    """Run on one worker: from now on it reports that the kernel cannot confine graded code there."""
    from autograder.delivery.classrun import worker

    worker.real = {"kernel_isolation": worker.kernel_isolation, **getattr(worker, "real", {})}
    worker.kernel_isolation = lambda: "no Landlock here, as a test says"


def no_answer() -> None:
    """Run on one worker: from now on it cannot say what it runs (as a worker of a kit without this code)."""
    from autograder.delivery.classrun import worker

    def broken():
        raise RuntimeError("no such worker code")

    worker.real = {"facts": worker.facts, **getattr(worker, "real", {})}
    worker.facts = broken


def restore() -> None:
    from autograder.delivery.classrun import worker

    for name, value in getattr(worker, "real", {}).items():
        setattr(worker, name, value)
    worker.real = {}


def another_kit() -> None:
    """Run on one worker (``client.run``): from now on it reports, and checks, another version of the kit."""
    from autograder.delivery.classrun import worker

    worker.real_kit_fingerprint = worker.kit_fingerprint
    worker.kit_fingerprint = lambda: "0123456789ab another kit"


def the_kit_again() -> None:
    from autograder.delivery.classrun import worker

    worker.kit_fingerprint = worker.real_kit_fingerprint
