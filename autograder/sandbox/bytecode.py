"""Compile the bytecode of every module the fork server imports: ``python -m autograder.sandbox.bytecode``.

The fork server imports torch, numpy and sympy (the meta device's) as the slot's user, who cannot write
into the environment, so a module with no bytecode cached is compiled afresh by every grading's server
(a second or more, sympy most of it). pip compiles a whole environment one file after another, about
half the time of README's first command and 100 MB of bytecode that no grading reads, so that command
installs with ``--no-compile`` and runs this: the exact files the server's preload imports, learned
from a preload in a process of its own, compiled on every core.
"""
from __future__ import annotations

import compileall
import json
import os
import subprocess
import sys
from concurrent.futures import ProcessPoolExecutor

_LIST = """
import json, os, sys
before = set(sys.modules)
from autograder.sandbox import child
child.preload(True)
print(json.dumps(sorted(f for name, m in sys.modules.items() if name not in before
                        and os.path.isabs(f := getattr(m, "__file__", None) or "") and f.endswith(".py"))))
"""


def imported_files() -> list[str]:
    """The source files of the modules a fork server's preload imports (not those Python imported at start)."""
    done = subprocess.run([sys.executable, "-c", _LIST], capture_output=True, text=True, timeout=600,
                          env={**os.environ, "PYTHONDONTWRITEBYTECODE": "1"})  # learn, write nothing yet
    if done.returncode != 0:
        raise SystemExit(f"the fork server's preload failed:\n{done.stderr[-3000:]}")
    files: list[str] = json.loads(done.stdout.splitlines()[-1])
    return files


def _compile(path: str) -> bool:
    return bool(compileall.compile_file(path, quiet=1))


def main() -> int:
    files = imported_files()
    with ProcessPoolExecutor(max(1, len(os.sched_getaffinity(0)))) as pool:
        failed = [f for f, ok in zip(files, pool.map(_compile, files, chunksize=32)) if not ok]
    print(f"compiled the bytecode of the {len(files)} modules a grading's fork server imports"
          + (f"; {len(failed)} failed: {', '.join(failed[:5])}" if failed else ""))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
