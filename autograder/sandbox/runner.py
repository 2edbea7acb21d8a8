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

import dataclasses
import io
import os
import pickletools
import signal
import subprocess
import threading
import time
import zipfile
from concurrent.futures import ThreadPoolExecutor, wait
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import torch

from ..errors import GradingError
from ..paths import KIT_ROOT
from ..public.feedback import Record, problem
from . import cgroups, linux, protocol, workspace, world
from .forkserver import ForkServer
from .protocol import START_TIMEOUT_S, Task
from .workspace import Submission, Workspace, read_small

if TYPE_CHECKING:
    from collections.abc import Iterable
    from pathlib import Path

    from .forkserver import Child

TASK_TIMEOUT_S = 10.0  # wall clock per task; the reference's slowest task takes well under 1 s
CPU_PER_WALL = 2.0  # CPU seconds allowed per wall-clock second of a task (torch runs threads)
MEMORY_LIMIT = 4 * 2**30
FILE_LIMIT = 16 * 2**20  # any one file the child writes, its error output included
EXTRA_PROCESSES = 32  # threads and processes beyond those the child has when it confines itself
STRIKES = 2  # probes of one stage whose code crashed or hung before the grader stops calling it
POLL_S = 0.02
SETUP_POLL_S = 0.002  # until the child stops to report its set-up, which it cannot leave alone
AHEAD_S = 0.005  # of decoding results between two looks at the child
# A verdict must not depend on load. A task's clock counts the time it ran or waited on itself, not
# the time it sat runnable while the machine ran something else (its main thread's run-queue wait).
# A task that still runs out of time, having waited for a CPU more than STARVED_SHARE of its time (the
# machine was busy: a busy core's sibling slows it too, unseen by the run queue), is run again alone,
# with ALONE_WALL_FACTOR times the time and the same CPU time, before it is charged. Past
# BUSY_WALL_FACTOR times its time in wall clock, the grading stops as the grader's failure, not the
# submission's, unless the task itself used the CPU it did not get (its own threads crowding it out).
UNCHARGED_WAIT = True
STARVED_SHARE = 0.25
ALONE_WALL_FACTOR = 2.0
BUSY_WALL_FACTOR = 6.0


Isolation = dict[str, str | list[str]]  # ``_layers``: each resource (and user, limits) -> what held it, in words


@dataclass
class Run:
    """What came back: one observation per task, and what protected the run; ``struck``, the probe tasks
    charged with a crash or a hang, in the order they were (the strikes)."""
    observations: dict[Task, Any]  # what the probe returned, as plain data, or its error record
    isolation: Isolation = field(default_factory=dict)
    struck: list[Task] = field(default_factory=list)


class _Stopped(Exception):
    """The other child of this grading failed (the grader's error): this one is stopped too."""


def _strikes(struck: list[Task], callable: str) -> int:
    """Strikes against ``callable`` among the tasks ``struck``: one per probe of it that crashed or hung,
    however many devices it did so on."""
    return len({t.name for t in struck if t.callable == callable})


def struck_out() -> dict[str, Record]:
    return error("NotRun", f"not run: the code this check calls crashed or hung {STRIKES} times already, so the "
                 "grader stopped calling it")


def error(kind: str, message: str) -> dict[str, Record]:
    return {"error": problem(kind, message)}


PLAIN_SCALARS = (str, int, float, bool, type(None))
# What one result file may make the grader do. A result is the child's word, in a folder the submission
# can write, so each is bounded far above any honest one (the reference's largest: 238 values, 3.6 KB of
# pickle, 18 records, 0.2 MB of tensors) and far below what would make grading slow or large.
RESULT_MAX_NODES = 20_000  # values, each a Python object here (up to ~100 bytes): ~2 MB per result at most
PICKLE_MAX_BYTES = 64 * 2**10  # torch's weights-only unpickler is Python (~3 us an opcode): 0.15 s for this much
ZIP_MAX_MEMBERS = 1024  # records of the zip torch.save writes: its pickle and one per tensor storage
TENSOR_MAX_BYTES = 2 * workspace.RESULT_MAX_BYTES  # what its tensors show: a stride of 0 shows 2^40 values over 1
# The only globals a result's pickle may name: what torch.save writes for a tensor of any dtype (its
# rebuild functions, storage types and dtypes, its empty hooks). torch's weights-only list has more,
# such as bytearray: bytearray(2**33) is 8 GiB of zeros from a file of 100 bytes.
PICKLE_GLOBALS = frozenset(
    {"torch._utils _rebuild_tensor_v2", "torch._utils _rebuild_tensor_v3", "torch.storage UntypedStorage",
     "collections OrderedDict"}
    | {f"torch {name}" for name, value in vars(torch).items() if isinstance(value, torch.dtype)
       or isinstance(value, type) and name.endswith("Storage") and name[:1] != "_" and "Typed" not in name})

_Where = tuple["_Where", int | str] | None  # where a value is in a result: None at its top, else (its parent's, key)


def validate(obj: object, path: str = "result") -> Any:
    """A copy of ``obj`` as a tree (tuples made lists, no object in two places) if it is plain data,
    exact types only, no subclasses, within one result's budgets; else ValueError, naming the first
    value that broke a rule.

    Nothing about it is trusted. It is walked by a loop, not recursion (a list nested 100,000 deep).
    A container held in several places (an honest result holds one error record under two keys) is
    counted, and copied, once for each: pickle's memo can make a list hold one other list 10,000 times
    at every level, whose tree is exponential (and a cycle's endless), so the count stops at
    ``RESULT_MAX_NODES`` before anything beyond is copied. Each tensor is a dense CPU tensor that lies
    within its storage, and together (counted as often as they are held) they show at most
    ``TENSOR_MAX_BYTES``."""
    nodes, shown = 0, 0
    top: list[Any] = [None]
    # (value, the copy it goes into, its key there, where: (parent's where, key)); the copy is Any: a list
    # keyed by index or a dict keyed by str, a pairing with its key that no type of the tuple can say
    todo: list[tuple[Any, Any, int | str, _Where]] = [(obj, top, 0, None)]

    def name(where: _Where) -> str:
        keys: list[str] = []
        while where is not None:
            where, key = where
            keys.append(f".{key}" if isinstance(key, str) else f"[{key}]")
        text = path + "".join(reversed(keys))
        return text if len(text) <= 120 else f"{text[:60]}...{text[-40:]}"

    while todo:
        value, into, key, where = todo.pop()
        nodes += 1
        t = type(value)
        if t in PLAIN_SCALARS:
            into[key] = value
        elif t is torch.Tensor:
            if value.requires_grad or value.device.type != "cpu":
                raise ValueError(f"{name(where)}: tensor must be a detached CPU tensor")
            if value.layout != torch.strided or value.is_quantized or value.is_nested:
                raise ValueError(f"{name(where)}: tensor must be a dense tensor")
            stride = value.stride()
            reach = value.storage_offset() + sum((n - 1) * s for n, s in zip(value.shape, stride)) + 1
            if min(stride, default=0) < 0 or value.numel() and (
                    reach * value.element_size() > value.untyped_storage().nbytes()):
                raise ValueError(f"{name(where)}: tensor reaches past its storage")
            shown += value.numel() * value.element_size()
            if shown > TENSOR_MAX_BYTES:
                raise ValueError(f"{name(where)}: its tensors show more than {TENSOR_MAX_BYTES // 2**20} MiB together")
            into[key] = value
        elif t in (list, tuple, dict):
            if nodes + len(todo) + len(value) > RESULT_MAX_NODES:  # each will be a value: refuse before copying
                raise ValueError(f"{name(where)}: more than {RESULT_MAX_NODES} values in one result, counting a "
                                 "list or dict once for every place that holds it")
            if t is dict and not all(type(k) is str for k in value):
                raise ValueError(f"{name(where)}: keys must be strings")
            copy = dict.fromkeys(value) if t is dict else [None] * len(value)
            todo.extend((v, copy, k, (where, k)) for k, v in (value.items() if t is dict else enumerate(value)))
            into[key] = copy
        else:
            raise ValueError(f"{name(where)}: {t.__name__} is not plain data")
    return top[0]


def load_result(data: bytes | str) -> Any:
    """The observation in one result file (``data``: its bytes), or the task's error record where the
    grader refuses it; ``data`` may also be why the grader did not read the file (a str). Bounded in
    time and memory whatever the bytes are: see ``_stored_zip`` and ``validate``."""
    try:
        if isinstance(data, str):
            raise ValueError(data)
        return validate(torch.load(io.BytesIO(_stored_zip(data)), weights_only=True))
    except Exception as exc:  # unreadable or not plain data: the task failed, grading goes on
        return error("BadResult", f"the grader could not read this result ({str(exc)[:200]})")


def _stored_zip(data: bytes) -> bytes:
    """``data``, a zip of torch.save, written again as a zip torch's reader can only copy out of.

    torch.load would inflate a deflated record (a 390 KB file gave a 400 MB tensor); in torch.save's
    old format it allocates each storage as large as declared before reading it; and its unpickler
    calls whatever its weights-only list allows. The child writes torch.save's zip, every record
    stored: so records are read here by Python's zipfile (each checked against its local header and
    CRC, all of them together no larger than the file), the pickle within ``PICKLE_MAX_BYTES`` and
    naming no global but ``PICKLE_GLOBALS``, and written into a fresh zip. Raises ValueError."""
    if not data.startswith(b"PK\x03\x04"):
        raise ValueError("not a zip file of torch.save")
    if data.count(b"PK\x01\x02") > ZIP_MAX_MEMBERS:  # one such header per record: counted before parsing any
        raise ValueError(f"more than {ZIP_MAX_MEMBERS} records")
    copy = io.BytesIO()
    with zipfile.ZipFile(io.BytesIO(data)) as z, zipfile.ZipFile(copy, "w") as out:
        records = z.infolist()
        if any(r.compress_type != zipfile.ZIP_STORED or r.compress_size != r.file_size for r in records):
            raise ValueError("a compressed record")
        if len({r.filename for r in records}) < len(records) or sum(r.file_size for r in records) > len(data):
            raise ValueError("records that overlap")
        for r in records:
            if r.filename.endswith("data.pkl"):
                if r.file_size > PICKLE_MAX_BYTES:
                    raise ValueError(f"a pickle larger than {PICKLE_MAX_BYTES // 2**10} KiB")
                for op, arg, _ in pickletools.genops(z.read(r)):  # every opcode that names a global
                    if op.name in ("GLOBAL", "STACK_GLOBAL", "INST", "OBJ", "EXT1", "EXT2", "EXT4") and (
                            op.name != "GLOBAL" or arg not in PICKLE_GLOBALS):
                        raise ValueError(f"its pickle names {str(arg)[:60]}, which no result needs")
            out.writestr(r.filename, z.read(r))
    return copy.getvalue()


def run_tasks(submission: Submission, tasks: list[Task], timeout_s: float = TASK_TIMEOUT_S,
              server: ForkServer | None = None, required: bool = False, threads: int | None = None,
              apart: Iterable[Task] = ()) -> Run:
    """Run ``tasks`` against ``submission`` (a ``submission.Submission``), in children forked by
    ``server`` (a ``ForkServer``; by default one started for this run alone, its children using
    ``threads`` torch threads). ``required``: stop with ``IsolationRequired`` rather than grade where
    the kernel does not confine the child. The whole run ends within ``worst_case_s``: past it, the
    tasks not yet run are "not run: grading took too long", and what was graded stands.

    ``apart``: tasks worth a child of their own (a long timed race), run at the same time as the others
    where ``room_beside`` allows; that child runs the import tasks first, as every child does (the
    others' results of those count), so each task meets the submission as it would have in one child."""
    if required:
        require_isolation()
    if server is None:
        with ForkServer(threads=threads) as server:  # one grading's: its first meta task warms that device
            return run_tasks(submission, tasks, timeout_s, server, required, apart=apart)
    measured, apart = [t for t in tasks if t.kind != "import"], set(apart)
    beside = [t for t in measured if t in apart]
    if not beside or len(beside) == len(measured) or room_beside(server) is not None:
        return _run_children(submission, tasks, timeout_s, server, required)
    stop = threading.Event()  # set by the child that fails (the grader's error): the other stops too

    def lane(some: list[Task]) -> Run:
        try:
            return _run_children(submission, some, timeout_s, server, required, stop=stop)
        except BaseException:
            stop.set()
            raise

    with ThreadPoolExecutor(1) as pool:
        other = pool.submit(lane, [t for t in tasks if t.kind == "import"] + beside)
        run = None
        try:
            run = lane([t for t in tasks if t not in beside])
        except _Stopped:  # the child beside failed first: its error is the one raised, below
            pass
        finally:
            wait([other])  # it ends within its own worst case, or at once once stopped
            server.kill_stragglers(None)  # what either child's processes left, swept once both have ended
    side = other.result()
    assert run is not None
    if len(side.isolation.get("not_kernel", ())) > len(run.isolation.get("not_kernel", ())):
        run.isolation = side.isolation  # the weaker child's, should they differ
    merged = {t: (side if t in beside else run).observations[t] for t in tasks}
    # As one child would have left them: once STRIKES probes of one callable crashed or hung, in either
    # child, the tasks of that callable after them in the plan are not run (the race, last of its layer's,
    # would otherwise earn what one child refuses a layer that crashes on every small input).
    order, struck = {t: i for i, t in enumerate(tasks)}, run.struck + side.struck
    for t in measured:
        if _strikes([s for s in struck if order[s] < order[t]], t.callable) >= STRIKES:
            merged[t] = struck_out()
    run.observations, run.struck = merged, sorted(struck, key=order.__getitem__)
    return run


def room_beside(server: ForkServer) -> str | None:
    """Why a task may not run in a child beside another one here, or None when it may: the server must
    serve one grading alone (``ForkServer.beside``), the machine needs a second core (else the two only
    take turns), the server must run two children at once (``ForkServer.concurrent``), and each child
    needs a control group, which alone tells the two children's processes apart when one ends (the
    slot's user-wide sweep would end the other too)."""
    if not server.beside:
        return "this server's gradings run beside other gradings already"
    if len(os.sched_getaffinity(0)) < 2:
        return "this process may use one core"
    if _available_memory() < 2 * GROUP_MEMORY_LIMIT:  # each child may hold that much, both at once
        return f"less than {2 * GROUP_MEMORY_LIMIT / 2**30:g} GiB of memory is available"
    server.start_now()
    if not server.concurrent:
        return "the fork server runs one child at a time here"
    return cgroups.unavailable()


def _available_memory() -> int:
    """The kernel's estimate of the memory that could be used without swapping (MemAvailable), in bytes."""
    try:
        with open("/proc/meminfo") as f:
            return next(int(line.split()[1]) * 1024 for line in f if line.startswith("MemAvailable:"))
    except (OSError, StopIteration, ValueError):
        return 0


def _run_children(submission: Submission, tasks: list[Task], timeout_s: float, server: ForkServer, required: bool,
                  stop: threading.Event | None = None) -> Run:
    """``run_tasks`` for one set of tasks, in children one after another. ``stop``: another set runs in
    children of the same server at the same time (the caller sweeps up after both); when it is set, the
    other has failed, and this one stops (``_Stopped``)."""
    deadline = time.monotonic() + worst_case_s(tasks, timeout_s)
    linux.become_subreaper()
    ws = Workspace(submission, server.uid, server.gid)
    run = Run({})
    results: dict[int, Any] = {}
    broken: dict[str, str] = {}
    pending = list(range(len(tasks)))
    alone, retried = None, set()  # a task held up by the machine, run again by itself
    try:
        while pending:
            if stop is not None and stop.is_set():
                raise _Stopped()
            left = deadline - time.monotonic()
            if left <= 0:
                for i in pending:
                    results[i] = error("NotRun", f"not run: grading this submission took longer than the "
                                       f"{worst_case_s(tasks, timeout_s):.0f} s all its checks may take together")
                break
            out = ws.child_dir()
            batch, wall = ([alone], timeout_s * ALONE_WALL_FACTOR) if alone is not None else (pending, timeout_s)
            found, blamed, why, reported, starved = _one_child(server, ws, tasks, batch, broken, out, wall,
                                                               timeout_s * CPU_PER_WALL, left, stop)
            results.update(found)
            alone = None
            if blamed is not None and starved and blamed not in retried and blamed not in results:
                retried.add(blamed)  # not charged yet: run it again alone
                alone, blamed = blamed, None
            elif blamed in retried and why is not None and why["error"]["type"] == "Timeout":
                first = why["error"]["message"].replace(f"after {wall:g} s", f"after {timeout_s:g} s", 1)
                why = error("Timeout", f"{first}; the machine was busy, so it was run again alone with "
                            f"{wall:g} s, and timed out again")
            layers = _layers(reported, ws, timeout_s)
            if not run.isolation or len(layers["not_kernel"]) > len(run.isolation["not_kernel"]):
                run.isolation = layers  # the weakest child's, should they differ
            if required and layers["not_kernel"]:
                weak = layers["not_kernel"][0]
                raise IsolationRequired(f"the course requires isolation enforced by the kernel, and a grading child's "
                                        f"{weak} got {layers['filesystem' if weak == 'files' else weak]}")
            if blamed is not None and blamed not in results:
                assert why is not None  # _one_child blames a task with its error
                task = tasks[blamed]
                results[blamed] = why
                # Strikes count the probes of one callable that crashed or hung, not the tasks: one probe
                # hanging on the CPU and again on CUDA is one attack, and costs no more with a GPU than without;
                # and a hang in CausalAttention stops the checks that call it, not MultiHeadAttention's.
                if task.kind == "import":
                    broken[task.name] = why["error"]["message"]
                else:
                    run.struck.append(task)
                    if _strikes(run.struck, task.callable) >= STRIKES:
                        for i in pending:
                            if i not in results and tasks[i].callable == task.callable:
                                results[i] = struck_out()
            pending = [i for i in pending if i not in results]
    finally:
        ws.remove()
    run.observations = {tasks[i]: results[i] for i in range(len(tasks))}
    return run


def worst_case_s(tasks: list[Task], timeout_s: float = TASK_TIMEOUT_S) -> float:
    """An upper bound on ``run_tasks``'s wall time, and the grader's own limit on it: every task runs
    to its timeout, and each of the crashes or hangs the strikes allow (one per probe and device)
    starts a child that takes as long as it may to start and is run again alone once."""
    starts = 1 + STRIKES * len({t.callable for t in tasks}) * len({t.device for t in tasks})
    return len(tasks) * (timeout_s + 1) + starts * (START_TIMEOUT_S + timeout_s * ALONE_WALL_FACTOR)


def _one_child(server: ForkServer, ws: Workspace, tasks: list[Task], pending: list[int], broken: dict[str, str],
               out: Path, timeout_s: float, cpu_limit: float, left: float, stop: threading.Event | None = None
               ) -> tuple[dict[int, Any], int | None, dict[str, Record] | None, protocol.IsolationReport, bool]:
    """Run ``pending`` tasks in one child, each within ``timeout_s`` of its own time (``_watch``) and
    ``cpu_limit`` CPU seconds, the whole child within ``left`` seconds. Returns (the results it wrote:
    index -> observation, the index blamed for an early end, its error, what the child reported of its
    isolation, whether the blamed task ran out of time on a busy machine)."""
    job = protocol.Job(
        submission=str(ws.submission), sandbox=str(ws.root), secrets=[str(p) for p in workspace.secrets()],
        kit_parent=str(KIT_ROOT) if str(KIT_ROOT) not in workspace.site_paths() else None, uid=ws.uid, gid=ws.gid,
        limits=protocol.Limits(MEMORY_LIMIT, FILE_LIMIT, cpu_limit, EXTRA_PROCESSES),
        out=str(out), home=str(ws.home), stash=str(ws.control / f"{out.name}.stash"), broken=broken,
        left_out=ws.left_out,
        tasks=[(i, tasks[i]) for i in pending], own_root=ws.own_root)
    job_path = ws.control / f"{out.name}.json"
    job.write(job_path)
    group, no_group = _job_group()
    beside = stop is not None
    if beside and group is None:  # its stragglers could be told from the other child's by its group alone
        raise GradingError(f"a grading child beside another needs a control group of its own, and got none: {no_group}")
    own_disk = None if ws.disk == workspace.TMPFS else (workspace.OUTPUT_BYTES, workspace.OUTPUT_INODES)
    proc = server.start(job_path, ws.control / f"{out.name}.stderr", out, ws.env(server.base_env()), tmpfs=own_disk)
    seen = proc.view(out)  # where the grader reads what the child wrote in ``out``
    ahead = _Ahead(seen, pending)
    layers: bytes | protocol.IsolationReport | None  # as the child wrote it, then with the grader's facts
    try:
        code, stopped, layers, starved = _watch(proc, seen, timeout_s, pending, cpu_limit, left, group, ahead, stop)
    finally:
        ended = _kill(proc)
        # Beside another child the user-wide sweep would end that one too: the removal of this child's group
        # below ends everything it started, and the caller sweeps once both have ended.
        server.kill_stragglers(proc.pid, everyone=not beside)
        out_of_memory = group is not None and group.ran_out_of_memory()
        if group is not None:
            group.remove()
    if not ended:
        raise GradingError(f"a grading child outlived SIGKILL for {KILLED_WITHIN_S} s")
    if layers is not None:
        layers = _with_grader_facts(layers, group, no_group, proc.output_tmpfs)
    if out_of_memory and stopped is None and code == -signal.SIGKILL:
        stopped = f"used more than {GROUP_MEMORY_LIMIT / 2**30:g} GiB of memory"  # the cgroup's OOM killer ended it
    if layers is None:  # the child never reached the end of its trusted set-up: no student code ran, the kit failed
        raise GradingError(f"the grader's child process failed to start ({stopped or _died(code, ws, out)})")
    # What the child wrote in its output folder after its set-up may be the submission's (it can write
    # there), so only results an honest child could have left count. It runs the tasks in order, names
    # each in CURRENT first and writes its result before naming the next: so results count in an
    # unbroken run from the first task, and one that ended on its own (the watch did not stop it)
    # ended during the task it last named, before any later one started, unless it said it was done.
    # They are read as regular files, CHILD_RESULTS_MAX_BYTES in all. Which results exist decides what
    # is blamed, never CURRENT's word alone.
    last, counted = _read_current(seen), pending
    if stopped is None and last != protocol.DONE:  # it ended on its own, during the task it last named
        counted = pending[:pending.index(last)] if last in pending else []
    found, budget = {}, workspace.CHILD_RESULTS_MAX_BYTES
    for i in counted:
        limit = min(workspace.RESULT_MAX_BYTES, budget)
        data = workspace.read_result(protocol.result_file(seen, i), limit)
        if data is None:
            break
        if isinstance(data, str) and limit < workspace.RESULT_MAX_BYTES:
            data = f"the results of one child may hold {workspace.CHILD_RESULTS_MAX_BYTES // 2**20} MiB together"
        found[i] = data
        budget -= len(data) if isinstance(data, bytes) else 0
    found = {i: ahead.load(data) for i, data in found.items()}
    missing = [i for i in pending if i not in found]
    if not missing:
        return found, None, None, layers, False
    current = _read_current(seen)
    blamed = current if current in missing else missing[0]
    how = stopped if stopped is not None else _died(code, ws, out)
    return found, blamed, _blame(tasks, blamed, how, timeout=stopped is not None), layers, starved


DONE_GRACE_S = 5.0  # for a child that has written its last result to end


def _job_group() -> tuple[cgroups.JobGroup, None] | tuple[None, str]:
    """(a ``JobGroup`` for the next child, None) or (None, why there is none)."""
    try:
        if "cgroup" not in protocol.KERNEL_LAYERS:
            raise cgroups.NoGroup("not tried")
        return cgroups.JobGroup(GROUP_MEMORY_LIMIT, EXTRA_PROCESSES + JOB_BASE_TASKS), None
    except cgroups.NoGroup as exc:
        return None, str(exc)


JOB_BASE_TASKS = 64  # threads a child holds when it is moved into its cgroup (torch's own and CUDA's), with room
# The group's memory: RLIMIT_AS lets one process hold MEMORY_LIMIT above what it had at set-up, and a
# submission may keep that (a module-level list) through its later tasks; the group counts that too, and
# the page cache and results those tasks add. With a line at MEMORY_LIMIT (this group's, and the watch on
# resident memory, which counts torch's own pages as well), an honest check after a hog's crossed it
# and was blamed; 1 GiB above, the hog's own task meets RLIMIT_AS first, and the group still bounds all
# its processes and memfd and tmpfs pages together.
GROUP_MEMORY_LIMIT = MEMORY_LIMIT + 2**30


def _with_grader_facts(reported: bytes, group: cgroups.JobGroup | None, why: str | None,
                       output_tmpfs: bool) -> protocol.IsolationReport:
    """The child's report (``protocol.IsolationReport``), with what the grader made for it, which the
    child cannot say: its cgroup, and whether the fork server mounted its output folder as a tmpfs of its own."""
    return dataclasses.replace(protocol.IsolationReport.from_json(reported), cgroup=group is not None,
                               cgroup_why=why, output="tmpfs" if output_tmpfs else "the grader's disk")


def _watch(proc: Child, out: Path, timeout_s: float, pending: list[int], cpu_limit: float | None = None,
           left: float | None = None, group: cgroups.JobGroup | None = None, ahead: _Ahead | None = None,
           stop: threading.Event | None = None) -> tuple[int | None, str | None, bytes | None, bool]:
    """Wait for the child; stop it when a task breaks a limit, when it outlives the time of all its
    ``pending`` tasks together, or when it does not end after saying it is done. The task in progress
    is the child's word, in a folder the submission can write, so the word cannot turn the watch off:
    each task's clock starts when it is first named and never starts again, and an index that is not
    pending is not a task. A task's clock is its own time: wall clock less the time its main thread
    sat runnable while the machine ran something else (``UNCHARGED_WAIT``). Returns (exit code, why
    stopped, what the child reported of its isolation, whether a task that ran out of time had waited
    for a CPU more than ``STARVED_SHARE`` of it); raises ``GradingError`` when the machine kept
    a task from running for ``BUSY_WALL_FACTOR`` times its time (no verdict is fair then).

    The report is read while the child is stopped at the end of its trusted set-up (it stops itself
    there, and this sends SIGCONT once the report is read), before any student code can rewrite it.
    Then, and only then, the child is moved into its cgroup ``group``: no student code has run yet.
    Meanwhile the results of finished tasks are decoded ``ahead``. ``stop``: set when the other child of
    this grading has failed; this one is stopped then (``_Stopped``)."""
    cpu_limit = timeout_s * CPU_PER_WALL if cpu_limit is None else cpu_limit
    started = time.monotonic()
    allowed = START_TIMEOUT_S + len(pending) * (timeout_s + 1)
    allowed = allowed if left is None else min(allowed, left)
    clocks: dict[int | str | None, tuple[float, float, float]]
    current, clocks, layers = None, {}, None  # clocks: task (or DONE) -> (wall, CPU, run-queue wait) when first named
    while True:
        try:  # quicker until the child has stopped to report: no student code waits on the grader after that
            return proc.wait(timeout=POLL_S if layers is not None else SETUP_POLL_S), None, layers, False
        except subprocess.TimeoutExpired:
            pass
        if layers is None and _stopped(proc.pid):
            layers = read_small(out / protocol.LAYERS, limit=4000) or b"{}"
            if group is not None:
                group.add(proc.pid)
            os.kill(proc.pid, signal.SIGCONT)
        now, (cpu, rss), waited = time.monotonic(), _usage(proc.pid), _waited(proc.pid)
        named = _read_current(out)
        if named in pending or named == protocol.DONE:
            if named not in clocks:
                clocks[named] = (now, cpu, waited)
            current = named
        since, cpu_since, waited_since = clocks.get(current, (started, 0.0, waited))
        if current is None and now - since > START_TIMEOUT_S:
            return None, f"the grader's child process did not start within {START_TIMEOUT_S:g} s", layers, False
        if current == protocol.DONE and now - since > DONE_GRACE_S:
            return None, "did not end after its last check", layers, False
        if current not in (None, protocol.DONE):
            wait, timed_out = waited - waited_since, f"timed out after {timeout_s:g} s"
            if now - since - (wait if UNCHARGED_WAIT else 0.0) > timeout_s:
                return None, timed_out, layers, wait > STARVED_SHARE * timeout_s
            if cpu - cpu_since > cpu_limit:
                return None, f"used more than {cpu_limit:g} s of CPU time", layers, False
            if now - since > BUSY_WALL_FACTOR * timeout_s:
                # Its own doing, not the machine's: its threads kept it from the CPU, or it lowered its own
                # priority or narrowed its CPUs (allowed on itself) so as to wait and pass for starved.
                if cpu - cpu_since > timeout_s or _stood_aside(proc.pid):
                    return None, timed_out, layers, False
                raise GradingError(f"the machine was too busy to grade: one check waited {wait:.0f} s "
                                   f"of {now - since:.0f} s for a CPU; grade again when it is quieter")
        if now - started - (waited if UNCHARGED_WAIT else 0.0) > allowed:
            return None, f"ran longer than all its checks may take together ({allowed:.0f} s)", layers, False
        if rss > GROUP_MEMORY_LIMIT:  # past what RLIMIT_AS lets it add: where it has none (CUDA), the bound
            return None, f"used more than {GROUP_MEMORY_LIMIT / 2**30:g} GiB of memory", layers, False
        if ahead is not None:
            ahead.read(current)
        if stop is not None and stop.is_set():
            raise _Stopped()


class _Ahead:
    """The results of finished tasks, decoded while the child runs on (the grading process would only
    wait; decoding 150 results takes 0.08 s). Kept by the bytes read: what counts is still what the file
    holds once the child has ended, read and bounded as before (``load``), and a file rewritten since
    is decoded again. Each file is read here once, in order, and for at most ``AHEAD_S`` per look."""

    decoded: dict[bytes, Any]  # a result's bytes -> what ``load_result`` made of them

    def __init__(self, out: Path, pending: list[int]):
        self.out, self.pending, self.next, self.decoded = out, pending, 0, {}

    def read(self, current: int | str | None) -> None:
        """Decode the results of the tasks before ``current``: a task's result is written before the next
        task is named (``protocol.DONE``: after the last)."""
        if current == protocol.DONE:
            finished = len(self.pending)
        elif current in self.pending:
            finished = self.pending.index(current)
        else:
            return
        stop = time.monotonic() + AHEAD_S
        while self.next < finished and time.monotonic() <= stop:
            data = workspace.read_result(protocol.result_file(self.out, self.pending[self.next]),
                                         workspace.RESULT_MAX_BYTES)
            self.next += 1
            if isinstance(data, bytes):
                self.decoded[data] = load_result(data)

    def load(self, data: bytes | str) -> Any:
        return self.decoded[data] if isinstance(data, bytes) and data in self.decoded else load_result(data)


def _stood_aside(pid: int) -> bool:
    """Whether process ``pid`` made itself wait: a higher nice value, another scheduling policy or fewer
    CPUs than the grader's (it was forked with the grader's own)."""
    fields = linux.proc_stat(pid)
    try:
        nice, policy = int(fields[16]), int(fields[38])  # /proc/<pid>/stat's 19th and 41st fields
        return (nice > os.getpriority(os.PRIO_PROCESS, 0) or policy != os.sched_getscheduler(0)
                or os.sched_getaffinity(pid) < os.sched_getaffinity(0))
    except (IndexError, ValueError, OSError):
        return True  # it cannot be told: the machine gets no benefit of the doubt here


def _stopped(pid: int) -> bool:
    return linux.proc_stat(pid)[:1] == [b"T"]


_TICKS, _PAGE = os.sysconf("SC_CLK_TCK"), os.sysconf("SC_PAGE_SIZE")


def _usage(pid: int) -> tuple[float, int]:
    """(CPU seconds, resident bytes) of process ``pid``; zeros when it cannot be read."""
    fields = linux.proc_stat(pid)
    try:
        return (int(fields[11]) + int(fields[12])) / _TICKS, int(fields[21]) * _PAGE
    except (IndexError, ValueError):
        return 0.0, 0


def _waited(pid: int) -> float:
    """Seconds the main thread of process ``pid`` (the one that runs the tasks) has spent runnable but
    waiting for a CPU: the second field of its schedstat; 0 where the kernel does not keep it. Only
    that thread's: the waits of several threads overlap, and the task's time is the main thread's."""
    try:
        with open(f"/proc/{pid}/schedstat", "rb") as f:
            return int(f.read().split()[1]) / 1e9
    except (OSError, IndexError, ValueError):
        return 0.0


def _read_current(out: Path) -> int | str | None:
    """The task the child last named, DONE, or None. The submission can write this file: only ASCII
    digits are an index (``"²".isdigit()`` is true, and ``int("²")`` raises)."""
    text = (read_small(out / protocol.CURRENT, limit=32) or b"").decode(errors="replace")
    return protocol.DONE if text == protocol.DONE else int(text) if text.isascii() and text.isdigit() else None


def _layers(reported: protocol.IsolationReport, ws: Workspace, timeout_s: float) -> Isolation:
    """What protected this run, for the report: for each resource (files, network, processes,
    memory, disk, IPC) what held it and whether that was the kernel. ``files`` is ``KERNEL`` when
    the kernel enforces the child's allow-list (Landlock, or a root of its own with no privileges
    left), else ``PYTHON``; ``not_kernel`` names the resources that only Python, or nothing whole,
    guards (``--require-isolation`` refuses to grade with any). ``reported``: the child's report,
    with the grader's facts (``_with_grader_facts``)."""
    abi, root = reported.landlock, reported.root
    enforced = [f"Landlock (ABI {abi})"] * bool(abi) + ["a root of its own"] * root
    missing = ([f"no Landlock: {reported.landlock_why or 'not tried'}"] * (not abi)
               + [f"no root of its own: {reported.root_why or 'no mount namespace'}"] * (not root))
    threads = reported.threads or 1
    if abi and abi < 8 and threads > 1:  # Landlock below ABI 8 binds the calling thread and what it starts
        missing.append(f"{threads - 1} thread(s) started before Landlock are outside it")
    # Without Landlock, a root of its own holds for native code only where the child keeps no privilege:
    # as root it becomes another user; as an ordinary user it gives up the capabilities its user namespace gave it.
    kernel = bool(abi) or (root and (ws.uid is not None or reported.capabilities == "dropped"))
    resources = _resources(reported, ws, abi)
    return {
        "user": f"uid {ws.uid} (unprivileged)" if ws.uid is not None else "the grading user (not root)",
        "files": KERNEL if kernel else PYTHON,
        "filesystem": (("only its own submission, Python and its libraries, enforced by " + " and ".join(enforced))
                       if kernel else "blocked in Python only (its audit hook): native code can read and write "
                       "whatever the grading user can") + ("" if not missing else f" ({'; '.join(missing)})"),
        **{name: text for name, (text, _) in resources.items()},
        "limits": (f"{timeout_s:g} s and {timeout_s * CPU_PER_WALL:g} CPU-s per task, "
                   f"{MEMORY_LIMIT / 2**30:g} GiB, {FILE_LIMIT // 2**20} MiB files"),
        "not_kernel": ["files"] * (not kernel) + [name for name, (_, held) in resources.items() if not held],
    }


def _resources(reported: protocol.IsolationReport, ws: Workspace, abi: int) -> dict[str, tuple[str, bool]]:
    """resource -> (what held it, in words; whether a kernel layer held all of it). The child reports
    its own layers before any student code runs; the cgroup and the workspace's disk are the grader's."""
    seccomp = reported.seccomp
    no_seccomp = f"no syscall filter: {reported.seccomp_why or 'not tried'}"
    filtered = "seccomp"

    if reported.network:
        network = "none (its own network namespace)", True
    elif seccomp:
        network = f"Unix sockets only ({filtered}; no network namespace: refused)", True
    else:
        network = f"blocked in Python only ({no_seccomp}; no network namespace)", False

    held = ["its own PID namespace" if reported.pids else "no PID namespace (the kernel refused one)"]
    held += [f"no call on another process ({filtered})"] * seccomp
    held += ["signals kept inside its Landlock domain"] * (abi >= 6)
    held += [f"another user (uid {ws.uid})"] * (ws.uid is not None)
    if reported.cgroup:
        held.append(f"at most {EXTRA_PROCESSES + JOB_BASE_TASKS} tasks (cgroup)")
    else:
        held.append(f"{EXTRA_PROCESSES} more tasks (RLIMIT_NPROC; no cgroup: {reported.cgroup_why})")
    processes = "; ".join(held), seccomp or reported.pids or ws.uid is not None and abi >= 6

    if reported.cgroup:
        memory = (f"{MEMORY_LIMIT / 2**30:g} GiB of address space a process (RLIMIT_AS), "
                  f"{GROUP_MEMORY_LIMIT / 2**30:g} GiB "
                  "counting every page it holds (cgroup)"), True
    elif seccomp:
        memory = (f"{MEMORY_LIMIT / 2**30:g} GiB of address space (RLIMIT_AS) with memfd_create refused ({filtered}); "
                  f"no cgroup: {reported.cgroup_why}"), True
    else:
        memory = (f"{MEMORY_LIMIT / 2**30:g} GiB of address space (RLIMIT_AS), not counting memfd or tmpfs pages "
                  f"({no_seccomp}; no cgroup: {reported.cgroup_why})"), False

    home_own, output_own = reported.home == "tmpfs", reported.output == "tmpfs"
    if ws.disk == workspace.TMPFS:
        disk = f"its workspace on a tmpfs of its own ({ws.disk_limits})", True
    elif home_own and output_own:  # the grader's own files (the submission's copy, the job) it cannot write
        disk = (f"its home and output folder on tmpfs mounts of their own ({world.HOME_BYTES // 2**20} MiB and "
                f"{world.HOME_INODES} files; {workspace.OUTPUT_BYTES // 2**20} MiB and {workspace.OUTPUT_INODES} "
                "files: the fork server's)"), True
    else:
        where = {(True, False): "its home on a tmpfs of its own, its output folder on the grader's disk",
                 (False, True): "its output folder on a tmpfs of its own, its home on the grader's disk"}.get(
                     (home_own, output_own), "its home and output folder on the grader's disk")
        disk = (f"{where}: {FILE_LIMIT // 2**20} MiB a file (RLIMIT_FSIZE), not bounded in total "
                f"({ws.disk_why or 'no tmpfs of its own'})"), False

    held_ipc = ["its own IPC namespace"] * (reported.ipc)
    held_ipc += [f"SysV and POSIX IPC and keyrings refused ({filtered})"] * seccomp
    held_ipc += ["a fresh session keyring"] * (reported.keyring)
    ipc = ("; ".join(held_ipc) or "shared with the grading user (no IPC namespace, no syscall filter)",
           reported.ipc or seccomp)
    return {"network": network, "processes": processes, "memory": memory, "disk": disk, "ipc": ipc}


KERNEL, PYTHON = "kernel", "python"
RESOURCES = ("files", "network", "processes", "memory", "disk", "ipc")


def isolation_line(isolation: Isolation) -> str:
    """The one line a grading prints on stderr: each resource with what held it."""
    if not isolation:
        return "isolation: not known (nothing was run)"
    words = {**isolation, "files": isolation.get("filesystem", "")}
    held = "; ".join(f"{name}: {words[name]}" for name in RESOURCES if name in words)
    weak = isolation.get("not_kernel") or []
    return (f"isolation: user: {isolation.get('user')}; {held}; limits: {isolation.get('limits')}"
            + (f" [not held by the kernel: {', '.join(weak)}]" if weak else " [every resource held by the kernel]"))


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


def require_isolation() -> None:
    """Stop, before anything is graded, where the course requires kernel isolation and it is not here."""
    why = kernel_isolation()
    if why:
        raise IsolationRequired(f"the course requires isolation enforced by the kernel (--require-isolation, "
                                f"require_isolation = true), and {why}")


SIGNALS: dict[int, str] = {
    signal.SIGXFSZ: f"wrote a file (or error output) larger than {FILE_LIMIT // 2**20} MiB",
    signal.SIGXCPU: "used up its CPU time",
    signal.SIGKILL: "was killed (SIGKILL), often for running out of memory",
    signal.SIGSEGV: "crashed with a segmentation fault",
}


def _died(code: int | None, ws: Workspace, out: Path) -> str:
    how = (SIGNALS.get(-code, f"was killed by signal {-code}") if code is not None and code < 0
           else f"exited (code {code})")
    words = _last_words(ws, out)
    return how + (f"; its last message: {words}" if words else "")


def _last_words(ws: Workspace, out: Path) -> str:
    tail = (read_small(ws.control / f"{out.name}.stderr", limit=FILE_LIMIT + 1) or b"")[-300:]
    lines = tail.decode(errors="replace").strip().splitlines()
    return lines[-1] if lines else ""


def _blame(tasks: list[Task], index: int, how: str, timeout: bool) -> dict[str, Record]:
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


KILLED_WITHIN_S = 30  # a child killed that has not ended by then never will: the grading stops, not hangs


def _kill(proc: Child) -> bool:
    """Kill the child's process group; whether the child has ended (within ``KILLED_WITHIN_S``)."""
    if proc.poll() is None:
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    try:
        proc.wait(KILLED_WITHIN_S)
    except subprocess.TimeoutExpired:
        return False
    return True
