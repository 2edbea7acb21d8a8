"""repeat_kv, called by its own check while the speed race may run in a child beside this one (where
the grader runs it apart), writes from C++ (torch.from_file, which Python's audit hook never sees)
into the working folder of every other process it can name, /proc/<pid>/cwd: the other child's
output folder, where a forged result of the race would earn its points. Its own check is lost, and
nothing is written."""
MODULE = "modern"
STAGES = [8]
NEEDS_KERNEL = "torch writes files in C++, out of sight of Python's audit hooks: only the kernel stops it"
LOSES = ["s8.repeat_kv"]
MENTIONS = "wrote nothing"

import os
import time


def _write_beside():
    denied, deadline = {}, time.monotonic() + 2.0  # the child beside starts a moment after this one
    while time.monotonic() < deadline:
        for pid in range(1, 128):
            if pid == os.getpid():
                continue
            try:
                planted = torch.from_file(f"/proc/{pid}/cwd/planted-beside", shared=True, size=8, dtype=torch.uint8)
            except RuntimeError as exc:
                denied[pid] = str(exc).splitlines()[0][:60]
                continue
            planted[:] = 1
            raise RuntimeError(f"LEAKED: wrote into the working folder of process {pid}")
        time.sleep(0.1)
    raise RuntimeError(f"wrote nothing: {len(denied)} processes refused, e.g. {next(iter(denied.values()), '')}")


_repeat_kv = repeat_kv
_outcome = []


def repeat_kv(t, groups):
    if tuple(t.shape) == (2, 3, 4, 5):  # the check's own input, not the layers' calls
        if not _outcome:  # tried once (the probe calls it several times within one time limit)
            try:
                _write_beside()
            except RuntimeError as exc:
                _outcome.append(str(exc))
        raise RuntimeError(_outcome[0])
    return _repeat_kv(t, groups)
