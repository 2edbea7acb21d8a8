"""pytest runs of the public checks forked from one process that has imported torch and pytest once.

A run in a fresh interpreter spends most of its 2-3 s of CPU importing torch, and the suite runs the
public checks against twenty variants of the reference: the verdicts they give a variant, not how a
student's process starts (``PytestRun``, in a fresh interpreter, tests that). multiprocessing's
forkserver is the standard library's way to fork many children from one warm process: each run is a
child of it, with its own working folder, environment, import state and output, and its own exit code.
"""
from __future__ import annotations

import multiprocessing
import os
import sys
import tempfile

_context = multiprocessing.get_context("forkserver")
_context.set_forkserver_preload(["torch", "pytest"])


def _run(args, cwd, env, output):
    """In the forked child: pytest as ``python -m pytest ARGS`` would run it, its output to ``output``."""
    os.chdir(cwd)
    os.environ.clear()
    os.environ.update(env)
    sys.dont_write_bytecode = True  # as PYTHONDONTWRITEBYTECODE: no __pycache__ in the student's folder
    sys.path.insert(0, cwd)  # where `python -m` puts the working folder
    fd = os.open(output, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    os.dup2(fd, 1)
    os.dup2(fd, 2)
    import pytest

    code = pytest.main(list(args))
    sys.stdout.flush()
    sys.stderr.flush()
    sys.exit(int(code))


class ForkedPytestRun:
    """``PytestRun``'s interface: started at once; ``result()`` waits: (exit code, output)."""

    def __init__(self, *args, cwd, env):
        self._output = tempfile.NamedTemporaryFile(prefix="pytest-run-", suffix=".txt", delete=False).name
        self.proc = _context.Process(target=_run, args=(args, str(cwd), dict(env), self._output))
        self.proc.start()
        self._result = None

    def result(self, timeout=300):
        if self._result is None:
            self.proc.join(timeout)
            if self.proc.exitcode is None:  # never a test that waits for ever
                self.proc.kill()
                self.proc.join()
            with open(self._output, errors="replace") as f:
                self._result = self.proc.exitcode, f.read()
            os.unlink(self._output)
        return self._result
