"""Runs forked from one process that has imported torch and pytest once: pytest (``ForkedPytestRun``)
or a Python script (``ForkedPython``), each in its own working folder and environment.

A run in a fresh interpreter spends most of its 2-3 s of CPU importing torch, and the suite makes
dozens of them whose point is what the run does, not how a process starts: the public checks'
verdicts on twenty variants of the reference, a class graded by grade-all with a hostile student in
it. multiprocessing's forkserver is the standard library's way to fork many children from one warm
process: each run is a child of it, with its own import state, output and exit code. What a fresh
interpreter does (a student's own ``python -m pytest``) is still tested with one (``PytestRun``).
"""
from __future__ import annotations

import multiprocessing
import os
import sys
import tempfile

_context = multiprocessing.get_context("forkserver")
_context.set_forkserver_preload(["torch", "pytest"])


def _pytest(args):
    import pytest

    return int(pytest.main(list(args)))


def _python(code):
    exec(compile(code, "<forked script>", "exec"), {"__name__": "__main__"})
    return 0


def _run(kind, payload, cwd, env, output, errors):
    """In the forked child: as ``python -m pytest ARGS`` or ``python -c CODE`` would run in ``cwd`` with
    ``env``, its stdout to the file ``output`` and its stderr to ``errors`` (the same file, or another)."""
    os.chdir(cwd)
    os.environ.clear()
    os.environ.update(env)
    sys.dont_write_bytecode = "PYTHONDONTWRITEBYTECODE" in env  # read at start-up by a fresh interpreter
    sys.path[:0] = [cwd, *filter(None, env.get("PYTHONPATH", "").split(os.pathsep))]  # where `python` puts them
    for target, path in ((1, output), (2, errors)):
        os.dup2(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600), target)
    try:
        code = {"pytest": _pytest, "python": _python}[kind](payload)
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
    sys.exit(code)


class _Forked:
    """Started at once; ``result()`` waits: (exit code, output), where output is stdout and stderr together
    unless ``stderr_apart``, which keeps stderr for ``self.stderr``."""

    def __init__(self, kind, payload, cwd, env, stderr_apart=False):
        self._files = [tempfile.NamedTemporaryFile(prefix="forked-run-", suffix=".txt", delete=False).name
                       for _ in range(1 + stderr_apart)]
        self.proc = _context.Process(target=_run, args=(kind, payload, str(cwd), dict(env), self._files[0],
                                                        self._files[-1]))
        self.proc.start()
        self._result = None
        self.stderr = ""

    def result(self, timeout=300):
        if self._result is None:
            self.proc.join(timeout)
            if self.proc.exitcode is None:  # never a test that waits for ever
                self.proc.kill()
                self.proc.join()
            said = []
            for path in self._files:
                with open(path, errors="replace") as f:
                    said.append(f.read())
                os.unlink(path)
            self.stderr = said[-1] if len(said) > 1 else ""
            self._result = self.proc.exitcode, said[0]
        return self._result


class ForkedPytestRun(_Forked):
    """``python -m pytest ARGS``, as ``PytestRun`` runs it, forked."""

    def __init__(self, *args, cwd, env):
        super().__init__("pytest", args, cwd, env)


class ForkedPython(_Forked):
    """``python -c CODE``, forked, its stderr kept apart (``stderr``)."""

    def __init__(self, code, cwd, env):
        super().__init__("python", code, cwd, env, stderr_apart=True)
