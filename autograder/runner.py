"""Run probes in a child process and bring back plain data (DESIGN principle 1).

The child imports the submission; this process only reads what the child wrote, with
``torch.load(weights_only=True)``, and accepts nothing but plain data. A task that hangs
is killed with its whole process group; a task that crashes the child is blamed for it;
the tasks after it run in a fresh child, so one broken stage never stops the others.
"""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import torch

from .feedback import problem

KIT_PARENT = Path(__file__).resolve().parent.parent
TASK_TIMEOUT_S = 30.0
MAX_CHILDREN = 12  # a submission that crashes every child still finishes grading


@dataclass(frozen=True)
class Task:
    kind: str  # "import" or "probe"
    name: str  # module name or probe name
    device: str = "cpu"


def error(kind, message):
    return {"error": problem(kind, message)}


PLAIN_SCALARS = (str, int, float, bool, type(None))


def validate(obj, path="result"):
    """Raise ValueError unless ``obj`` is plain data: exact types only, no subclasses."""
    t = type(obj)
    if t in PLAIN_SCALARS:
        return obj
    if t is torch.Tensor:
        if obj.requires_grad or obj.device.type != "cpu":
            raise ValueError(f"{path}: tensor must be a detached CPU tensor")
        return obj
    if t in (list, tuple):
        return [validate(v, f"{path}[{i}]") for i, v in enumerate(obj)]
    if t is dict:
        if not all(type(k) is str for k in obj):
            raise ValueError(f"{path}: keys must be strings")
        return {k: validate(v, f"{path}.{k}") for k, v in obj.items()}
    raise ValueError(f"{path}: {t.__name__} is not plain data")


def load_result(path):
    try:
        return validate(torch.load(path, weights_only=True))
    except Exception as exc:  # unreadable or not plain data: the task failed, grading goes on
        return error("BadResult", f"the grader could not read this result ({exc})")


def run_tasks(submission: Path, tasks: list[Task], timeout_s: float = TASK_TIMEOUT_S) -> dict:
    """Run ``tasks`` against ``submission`` (the folder that holds ``attention_lab/``)."""
    results: dict[int, dict] = {}
    broken: dict[str, str] = {}
    pending = list(range(len(tasks)))
    with tempfile.TemporaryDirectory(prefix="attention-lab-") as tmp:
        for attempt_no in range(MAX_CHILDREN):
            if not pending:
                break
            out = Path(tmp) / f"child{attempt_no}"
            out.mkdir()
            blamed, why = _one_child(submission, tasks, pending, broken, out, timeout_s)
            for i in pending:
                if (out / f"{i}.pt").exists():
                    results[i] = load_result(out / f"{i}.pt")
            if blamed is not None and blamed not in results:
                results[blamed] = why
                if tasks[blamed].kind == "import":
                    broken[tasks[blamed].name] = why["error"]["message"]
            pending = [i for i in pending if i not in results]
        for i in pending:
            results[i] = error("NotRun", "not run: the grader's child process kept crashing before it")
    return {tasks[i]: results[i] for i in range(len(tasks))}


def _one_child(submission, tasks, pending, broken, out, timeout_s):
    """Run ``pending`` tasks in one child. Returns (index blamed for an early end, its error)."""
    job = {
        "submission": str(submission),
        "out": str(out),
        "broken": broken,
        "tasks": [[i, tasks[i].kind, tasks[i].name, tasks[i].device] for i in pending],
    }
    (out / "job.json").write_text(json.dumps(job))
    boot = f"import sys; sys.path.insert(0, {str(KIT_PARENT)!r}); from autograder.child import main; main(sys.argv[1])"
    stderr = open(out / "stderr.txt", "wb")
    proc = subprocess.Popen(
        [sys.executable, "-I", "-c", boot, str(out / "job.json")],
        cwd=out, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=stderr,
        start_new_session=True,  # its own process group: a kill takes its children too
    )
    current, since = None, time.monotonic()
    try:
        while True:
            try:
                code = proc.wait(timeout=0.02)
                break
            except subprocess.TimeoutExpired:
                pass
            now = _read_current(out)
            if now != current:
                current, since = now, time.monotonic()
            elif current is not None and time.monotonic() - since > timeout_s:
                _kill(proc)
                return current, error("Timeout", f"timed out after {timeout_s:g} s")
        if code == 0 and _read_current(out) == "done":
            return None, None
        current = _read_current(out)
        if current in (None, "done"):
            return (pending[0] if current is None else None), _died(code, out)
        return current, _died(code, out)
    finally:
        _kill(proc)
        stderr.close()


def _read_current(out):
    try:
        text = (out / "current").read_text()
    except OSError:
        return None
    return "done" if text == "done" else int(text) if text.isdigit() else None


def _died(code, out):
    tail = (out / "stderr.txt").read_bytes()[-300:].decode(errors="replace").strip().splitlines()
    last = tail[-1] if tail else ""
    how = f"killed by signal {-code}" if code is not None and code < 0 else f"exited with code {code}"
    return error("Crash", f"the process running the submission {how} during this check"
                 + (f" (last message: {last})" if last else ""))


def _kill(proc):
    if proc.poll() is None:
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        proc.wait()
