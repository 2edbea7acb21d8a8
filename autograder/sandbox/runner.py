"""Run probes in a child process and bring back plain data (the design's first principle:
student code never runs in the process that scores it).

The child is forked by a ``ForkServer`` (one per grading, or one per worker when a class is
graded) and imports the submission; this process only reads what the child wrote: small regular
files (never a link or a FIFO), loaded with ``torch.load(weights_only=True)`` and accepted only
as plain data. A watchdog kills the child's whole process group, and everything that escaped
it, when a task runs past its wall-clock or CPU time or the child grows past its memory limit.
A task that crashes or hangs is blamed for it, and the tasks after it run in a fresh child; a
callable (a probe name's ``s<stage>.<callable>``) whose code has crashed or hung ``STRIKES`` times
is not called again, so a hostile submission finishes within a bound while everything else of it is
graded normally.
"""
from __future__ import annotations

import io
import json
import os
import signal
import subprocess
import time
from dataclasses import dataclass, field

import torch

from ..errors import GradingError
from ..paths import KIT_ROOT
from ..public.feedback import problem
from . import linux, protocol, workspace
from .forkserver import ForkServer
from .protocol import START_TIMEOUT_S, Task
from .workspace import Workspace, read_small

TASK_TIMEOUT_S = 10.0  # wall clock per task; the reference's slowest task takes well under 1 s
CPU_PER_WALL = 2.0  # CPU seconds allowed per wall-clock second of a task (torch runs threads)
MEMORY_LIMIT = 4 * 2**30
FILE_LIMIT = 16 * 2**20  # any one file the child writes, its error output included
EXTRA_PROCESSES = 32  # threads and processes beyond those the child has when it confines itself
STRIKES = 2  # probes of one stage whose code crashed or hung before the grader stops calling it
POLL_S = 0.02


@dataclass
class Run:
    """What came back: one observation per task, and what protected the run."""
    observations: dict
    isolation: dict = field(default_factory=dict)


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


def load_result(data):
    try:
        return validate(torch.load(io.BytesIO(data), weights_only=True))
    except Exception as exc:  # unreadable or not plain data: the task failed, grading goes on
        return error("BadResult", f"the grader could not read this result ({str(exc)[:200]})")


def run_tasks(submission, tasks: list[Task], timeout_s: float = TASK_TIMEOUT_S, server=None, required=False) -> Run:
    """Run ``tasks`` against ``submission`` (a ``submission.Submission``), in children forked by
    ``server`` (a ``ForkServer``; by default one started for this run alone). ``required``: stop
    with ``IsolationRequired`` rather than grade where the kernel does not confine the child."""
    if required:
        require_isolation()
    if server is None:
        with ForkServer(meta=any(t.device == "meta" for t in tasks)) as server:
            return run_tasks(submission, tasks, timeout_s, server, required)
    linux.become_subreaper()
    ws = Workspace(submission, server.uid, server.gid)
    run = Run({})
    results: dict[int, dict] = {}
    broken: dict[str, str] = {}
    struck: dict[str, set] = {}
    pending = list(range(len(tasks)))
    try:
        while pending:
            out = ws.child_dir()
            found, blamed, why, reported = _one_child(server, ws, tasks, pending, broken, out, timeout_s)
            results.update({i: load_result(data) for i, data in found.items()})
            layers = _layers(reported, ws, timeout_s)
            if not run.isolation or layers["files"] == PYTHON:  # the weakest child's, should they differ
                run.isolation = layers
            if required and layers["files"] == PYTHON:
                raise IsolationRequired(f"the course requires isolation enforced by the kernel, and a grading child "
                                        f"got {layers['filesystem']}")
            if blamed is not None and blamed not in results:
                task = tasks[blamed]
                results[blamed] = why
                # Strikes count the probes of one callable that crashed or hung, not the tasks: one probe
                # hanging on the CPU and again on CUDA is one attack, and costs no more with a GPU than without;
                # and a hang in CausalAttention stops the checks that call it, not MultiHeadAttention's.
                struck.setdefault(task.callable, set()).add(task.name)
                if task.kind == "import":
                    broken[task.name] = why["error"]["message"]
                elif len(struck[task.callable]) >= STRIKES:
                    for i in pending:
                        if i not in results and tasks[i].callable == task.callable:
                            results[i] = error("NotRun", f"not run: the code this check calls crashed or hung "
                                               f"{STRIKES} times already, so the grader stopped calling it")
            pending = [i for i in pending if i not in results]
    finally:
        ws.remove()
    run.observations = {tasks[i]: results[i] for i in range(len(tasks))}
    return run


def worst_case_s(tasks: list[Task], timeout_s: float = TASK_TIMEOUT_S) -> float:
    """An upper bound on ``run_tasks``'s wall time: every task runs to its timeout, and each of
    the crashes or hangs the strikes allow (one per probe and device) starts a child that takes as long as
    it may to start."""
    starts = 1 + STRIKES * len({t.callable for t in tasks}) * len({t.device for t in tasks})
    return len(tasks) * (timeout_s + 1) + starts * START_TIMEOUT_S


def _one_child(server, ws, tasks, pending, broken, out, timeout_s):
    """Run ``pending`` tasks in one child. Returns (the results it wrote: index -> bytes, the index
    blamed for an early end, its error, what the child reported of its isolation)."""
    job = protocol.Job(
        submission=str(ws.submission), sandbox=str(ws.root), secrets=[str(p) for p in workspace.secrets()],
        kit_parent=str(KIT_ROOT) if str(KIT_ROOT) not in workspace.site_paths() else None, uid=ws.uid, gid=ws.gid,
        limits=protocol.Limits(MEMORY_LIMIT, FILE_LIMIT, timeout_s * CPU_PER_WALL, EXTRA_PROCESSES),
        out=str(out), home=str(ws.home), stash=str(ws.control / f"{out.name}.stash"), broken=broken,
        left_out=ws.left_out,
        tasks=[(i, tasks[i]) for i in pending], own_root=ws.own_root)
    job_path = ws.control / f"{out.name}.json"
    job.write(job_path)
    proc = server.start(job_path, ws.control / f"{out.name}.stderr", out, ws.env(server.base_env()))
    try:
        code, stopped, layers = _watch(proc, out, timeout_s, pending)
    finally:
        _kill(proc)
        server.kill_stragglers(proc.pid)
    if layers is None:  # the child never reached the end of its trusted set-up: no student code ran, the kit failed
        raise GradingError(f"the grader's child process failed to start ({stopped or _died(code, ws, out)})")
    # What the child wrote in its output folder after its set-up may be the submission's (it can write
    # there): which results exist decides what is blamed, never CURRENT's word alone.
    found = {i: data for i in pending if (data := read_small(protocol.result_file(out, i))) is not None}
    missing = [i for i in pending if i not in found]
    if not missing:
        return found, None, None, layers
    current = _read_current(out)
    blamed = current if current in missing else missing[0]
    how = stopped if stopped is not None else _died(code, ws, out)
    return found, blamed, _blame(tasks, blamed, how, timeout=stopped is not None), layers


DONE_GRACE_S = 5.0  # for a child that has written its last result to end


def _watch(proc, out, timeout_s, pending):
    """Wait for the child; stop it when a task breaks a limit, when it outlives the time of all its
    ``pending`` tasks together, or when it does not end after saying it is done. The task in progress
    is the child's word, in a folder the submission can write, so the word cannot turn the watch off:
    each task's clock starts when it is first named and never starts again, and an index that is not
    pending is not a task. Returns (exit code, why stopped, what the child reported of its isolation).

    The report is read while the child is stopped at the end of its trusted set-up (it stops itself
    there, and this sends SIGCONT once the report is read), before any student code can rewrite it."""
    cpu_limit = timeout_s * CPU_PER_WALL
    started = time.monotonic()
    allowed = START_TIMEOUT_S + len(pending) * (timeout_s + 1)
    current, clocks, layers = None, {}, None  # clocks: task (or DONE) -> (wall, CPU) when first named
    while True:
        try:
            return proc.wait(timeout=POLL_S), None, layers
        except subprocess.TimeoutExpired:
            pass
        if layers is None and _stopped(proc.pid):
            layers = read_small(out / protocol.LAYERS, limit=4000) or b"{}"
            os.kill(proc.pid, signal.SIGCONT)
        now, (cpu, rss) = time.monotonic(), _usage(proc.pid)
        named = _read_current(out)
        if named in pending or named == protocol.DONE:
            clocks.setdefault(named, (now, cpu))
            current = named
        since, cpu_since = clocks.get(current, (started, 0.0))
        if current is None and now - since > START_TIMEOUT_S:
            return None, f"the grader's child process did not start within {START_TIMEOUT_S:g} s", layers
        if current == protocol.DONE and now - since > DONE_GRACE_S:
            return None, "did not end after its last check", layers
        if current not in (None, protocol.DONE):
            if now - since > timeout_s:
                return None, f"timed out after {timeout_s:g} s", layers
            if cpu - cpu_since > cpu_limit:
                return None, f"used more than {cpu_limit:g} s of CPU time", layers
        if now - started > allowed:
            return None, f"ran longer than all its checks may take together ({allowed:.0f} s)", layers
        if rss > MEMORY_LIMIT:
            return None, f"used more than {MEMORY_LIMIT / 2**30:g} GiB of memory", layers


def _stopped(pid):
    fields = linux.proc_stat(pid)
    return bool(fields) and fields[0] == b"T"


_TICKS, _PAGE = os.sysconf("SC_CLK_TCK"), os.sysconf("SC_PAGE_SIZE")


def _usage(pid):
    """(CPU seconds, resident bytes) of process ``pid``; zeros when it cannot be read."""
    fields = linux.proc_stat(pid)
    try:
        return (int(fields[11]) + int(fields[12])) / _TICKS, int(fields[21]) * _PAGE
    except (TypeError, IndexError, ValueError):
        return 0.0, 0


def _read_current(out):
    text = (read_small(out / protocol.CURRENT, limit=32) or b"").decode(errors="replace")
    return protocol.DONE if text == protocol.DONE else int(text) if text.isdigit() else None


def _layers(reported, ws, timeout_s):
    """What protected this run, for the report: a separate user, no network, the files it could
    reach and how that was enforced, limits. ``files`` is ``KERNEL`` when the kernel enforces the
    child's allow-list (Landlock, or a root of its own with no privileges left), else ``PYTHON``."""
    try:
        reported = json.loads(reported or b"{}")
    except ValueError:
        reported = {}
    reported = reported if isinstance(reported, dict) else {}
    abi, root = reported.get("landlock") or 0, reported.get("root") is True
    enforced = [f"Landlock (ABI {abi})"] * bool(abi) + ["a root of its own"] * root
    missing = ([f"no Landlock: {reported.get('landlock_why') or 'not tried'}"] * (not abi)
               + [f"no root of its own: {reported.get('root_why') or 'no mount namespace'}"] * (not root))
    threads = reported.get("threads") or 1
    if abi and abi < 8 and threads > 1:  # Landlock below ABI 8 binds the calling thread and what it starts
        missing.append(f"{threads - 1} thread(s) started before Landlock are outside it")
    # Without Landlock, a root of its own holds for native code only where the child keeps no privilege:
    # as root it becomes another user; as an ordinary user it gives up the capabilities its user namespace gave it.
    kernel = bool(abi) or (root and (ws.uid is not None or reported.get("capabilities") == "dropped"))
    return {
        "user": f"uid {ws.uid} (unprivileged)" if ws.uid is not None else "the grading user (not root)",
        "network": "none (own network namespace)" if reported.get("network") is True else "blocked in Python only",
        "files": KERNEL if kernel else PYTHON,
        "filesystem": (("only its own submission, Python and its libraries, enforced by " + " and ".join(enforced))
                       if kernel else "blocked in Python only (its audit hook): native code can read and write "
                       "whatever the grading user can") + ("" if not missing else f" ({'; '.join(missing)})"),
        "limits": (f"{timeout_s:g} s and {timeout_s * CPU_PER_WALL:g} CPU-s per task, "
                   f"{MEMORY_LIMIT / 2**30:g} GiB, {FILE_LIMIT // 2**20} MiB files"),
    }


KERNEL, PYTHON = "kernel", "python"


class IsolationRequired(GradingError):
    """The course requires the kernel to confine graded code, and this machine cannot."""


def kernel_isolation() -> str | None:
    """None when a grading child here gets a kernel-enforced allow-list (Landlock, or as root a
    root of its own); else why not, in one sentence."""
    from .world import landlock_unavailable

    no_landlock = landlock_unavailable() if "landlock" in protocol.KERNEL_LAYERS else "Landlock is not tried"
    if no_landlock is None or (workspace.is_root() and "namespaces" in protocol.KERNEL_LAYERS
                               and workspace.children_own_root()):
        return None
    return (f"this machine gives graded code no kernel-enforced file system rule: {no_landlock}"
            + ("" if workspace.is_root() else ", and as an ordinary user only Landlock can do it"))


def require_isolation():
    """Stop, before anything is graded, where the course requires kernel isolation and it is not here."""
    why = kernel_isolation()
    if why:
        raise IsolationRequired(f"the course requires isolation enforced by the kernel (--require-isolation, "
                                f"require_isolation = true), and {why}")


SIGNALS = {
    signal.SIGXFSZ: f"wrote a file (or error output) larger than {FILE_LIMIT // 2**20} MiB",
    signal.SIGXCPU: "used up its CPU time",
    signal.SIGKILL: "was killed (SIGKILL), often for running out of memory",
    signal.SIGSEGV: "crashed with a segmentation fault",
}


def _died(code, ws, out):
    how = (SIGNALS.get(-code, f"was killed by signal {-code}") if code is not None and code < 0
           else f"exited (code {code})")
    words = _last_words(ws, out)
    return how + (f"; its last message: {words}" if words else "")


def _last_words(ws, out):
    tail = (read_small(ws.control / f"{out.name}.stderr", limit=FILE_LIMIT + 1) or b"")[-300:]
    lines = tail.decode(errors="replace").strip().splitlines()
    return lines[-1] if lines else ""


def _blame(tasks, index, how, timeout):
    """The error for the task in progress when the child was stopped (timeout) or died."""
    task = tasks[index]
    if task.kind == "import":
        module = f"attention_lab/{task.name}.py"
        if timeout:
            return error("Timeout", f"{how} while {module} was being imported")
        if how.startswith("exited"):  # exited (code 0); ...
            return error("Crash", f"the submission exited during import of {module} {how.removeprefix('exited ')}")
        return error("Crash", f"the submission {how} during import of {module}")
    if timeout:
        return error("Timeout", f"{how} while this check ran")
    return error("Crash", f"the submission {how} while this check ran")


def _kill(proc):
    if proc.poll() is None:
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    proc.wait()
