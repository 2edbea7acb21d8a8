"""Run probes in a child process and bring back plain data (the design's first principle:
student code never runs in the process that scores it).

The child is forked by a ``ForkServer`` (one per grading, or one per worker when a class is
graded) and imports the submission. This process asks it for one task at a time and reads the
answer to that request alone: a small regular file (never a link or a FIFO), loaded with
``torch.load(weights_only=True)`` and accepted only as plain data; whatever else the child wrote
counts for nothing. Each request is timed from outside the child (its CPU time from ``/proc``, its
own wall-clock time less its waits for a CPU), and the watch kills the child's whole process group
when a request runs past its time or CPU, or the child grows past its memory limit. A task that
crashes or hangs is blamed for it, and the tasks after it run in a fresh child; a callable (a probe
name's ``s<stage>.<callable>``) whose code has crashed or hung ``STRIKES`` times is not called again,
so a hostile submission finishes within a bound while everything else of it is graded normally. A
race (stage 8's speed) is driven from here against the student's child and a child of the kit's own.
"""
from __future__ import annotations

import contextlib
import dataclasses
import io
import json
import math
import os
import pickletools
import select
import signal
import subprocess
import threading
import time
import zipfile
from collections.abc import Callable, Iterable, Mapping
from concurrent.futures import ThreadPoolExecutor, wait
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TypedDict

import torch

from ..errors import GradingError
from ..paths import KIT_ROOT
from ..public.feedback import Record, problem
from . import cgroups, linux, protocol, workspace, world
from .forkserver import ForkServer
from .protocol import START_TIMEOUT_S, Task
from .workspace import Submission, Workspace, read_small

if TYPE_CHECKING:
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


class Isolation(TypedDict, total=False):
    """What held a grading's child (``_layers``), as ``results.json``'s ``extra_data.isolation`` keeps it:
    each resource (``RESOURCES``; ``files`` in words is ``filesystem``) and the user and limits, in words,
    and what fell short, in two kinds, since they answer two questions: ``not_kernel``, the resources that
    no kernel layer held (Python alone, or nothing whole), is what ``--require-isolation`` refuses to grade
    with, as the docs promise; ``missing``, the kit's kernel layers that did not hold here, is what an
    instructor must hear of even where another layer still holds every resource (no syscall filter, where
    namespaces hold the network, the processes and IPC), with ``lost``, what each of them would have held."""
    user: str
    files: str  # KERNEL or PYTHON: whether the kernel enforced the child's allow-list of files
    filesystem: str
    network: str
    processes: str
    memory: str
    disk: str
    ipc: str
    limits: str
    not_kernel: list[str]  # resources no kernel layer held
    missing: dict[str, str]  # each of protocol.KERNEL_LAYERS that did not hold this child -> why not
    lost: dict[str, list[str]]  # each resource held by fewer of those layers than it is where all hold -> which


@dataclass
class Run:
    """What came back: one observation per task, and what protected the run; ``struck``, the probe tasks
    charged with a crash or a hang, in the order they were (the strikes)."""
    observations: dict[Task, Any]  # what the probe returned, as plain data, or its error record
    isolation: Isolation = field(default_factory=Isolation)
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


NO_RESULT = "no result was written"


def load_result(data: bytes | str, raw: bool = False) -> Any:
    """The observation in one result file (``data``: its bytes), or the task's error record where the
    grader refuses it; ``data`` may also be why the grader did not read the file (a str). Bounded in
    time and memory whatever the bytes are: see ``_stored_zip`` and ``validate``. ``raw``: the request was
    timed, and its output may come as ``protocol.RAW_TENSOR`` (nowhere else)."""
    try:
        if isinstance(data, str):
            raise ValueError(data)
        if raw and data.startswith(protocol.RAW_TENSOR):
            return _raw_tensor(data)
        return validate(torch.load(io.BytesIO(_stored_zip(data)), weights_only=True))
    except Exception as exc:  # unreadable or not plain data: the task failed, grading goes on
        return error("BadResult", f"the grader could not read this result ({str(exc)[:200]})")


RAW_DTYPES = {name: getattr(torch, name) for name in protocol.RAW_DTYPES}


def _raw_tensor(data: bytes) -> torch.Tensor:
    """The tensor of a result written raw (``protocol.RAW_TENSOR``): its header is a dtype of
    ``RAW_DTYPES`` and a shape whose size is exactly the bytes that follow. Raises ValueError."""
    start = len(protocol.RAW_TENSOR)
    end = data.find(b"\n", start, start + protocol.RAW_HEADER_MAX_BYTES)
    if end < 0:
        raise ValueError("a raw tensor without its header")
    header = json.loads(data[start:end])
    if not isinstance(header, dict) or header.get("dtype") not in RAW_DTYPES:
        raise ValueError("a raw tensor of no dtype it may have")
    shape, dtype = header.get("shape"), RAW_DTYPES[header["dtype"]]
    if not isinstance(shape, list) or len(shape) > 8 or not all(type(n) is int and 0 <= n <= 2**31 for n in shape):
        raise ValueError("a raw tensor of no shape it may have")
    body = data[end + 1:]  # within RESULT_MAX_BYTES already: the file was read within that bound
    size = math.prod(shape) * dtype.itemsize
    if size != len(body):
        raise ValueError(f"a raw tensor of {len(body)} bytes where its shape says {size}")
    if not size:
        return torch.empty(shape, dtype=dtype)
    return torch.frombuffer(bytearray(body), dtype=torch.uint8).view(dtype).reshape(shape)


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


# A race (``Probes.race``): called in the grading process with two ways of asking, the student's child and a
# child of the kit's own, ``ask(probe name, seed) -> Answer``; returns the check's observation.
Ask = Callable[[str, "int | None"], "Answer"]
Race = Callable[[Ask, Ask], Any]
RACE_TASKS = 4  # what a race may take, in tasks' time: its rounds stop at a budget of the student's time


def run_tasks(submission: Submission, tasks: list[Task], timeout_s: float = TASK_TIMEOUT_S,
              server: ForkServer | None = None, required: bool = False, threads: int | None = None,
              apart: Iterable[Task] = (), races: Mapping[Task, Race] | None = None,
              handwritten: Iterable[Task] = (), progress: Callable[[Task], object] | None = None) -> Run:
    """Run ``tasks`` against ``submission`` (a ``submission.Submission``), in children forked by
    ``server`` (a ``ForkServer``; by default one started for this run alone, its children using
    ``threads`` torch threads). ``required``: stop with ``IsolationRequired`` rather than grade where
    the kernel does not confine the child. The whole run ends within ``worst_case_s``: past it, the
    tasks not yet run are "not run: grading took too long", and what was graded stands.

    ``races``: tasks that are races (``Race``), driven from here against the student's child and a child
    of the kit's own. ``handwritten``: tasks of stages written by hand: library attention is refused
    while they run, and the child may run no thread but its own (``_Child.ask``). ``apart``: tasks worth
    a child of their own (a long timed race), run at the same time as the others where ``room_beside``
    allows; that child runs the import tasks first, as every child does (the others' results of those
    count), so each task meets the submission as it would have in one child. ``progress(task)`` is told of
    each task as its result is in (from the thread of either child: it must be safe to call from two)."""
    races, handwritten = dict(races or {}), frozenset(handwritten)
    students = _Students()  # the student's children alive, in either lane: all stopped while the kit's answers
    if required:
        require_isolation()
    if server is None:
        with ForkServer(threads=threads) as server:  # one grading's: its first meta task warms that device
            return run_tasks(submission, tasks, timeout_s, server, required, apart=apart, races=races,
                             handwritten=handwritten, progress=progress)
    measured, apart = [t for t in tasks if t.kind != "import"], set(apart)
    beside = [t for t in measured if t in apart]
    if not beside or len(beside) == len(measured) or room_beside(server) is not None:
        return _run_children(submission, tasks, timeout_s, server, required, races=races, handwritten=handwritten,
                             progress=progress, students=students)
    stop = threading.Event()  # set by the child that fails (the grader's error): the other stops too

    def lane(some: list[Task]) -> Run:
        try:
            return _run_children(submission, some, timeout_s, server, required, stop=stop, races=races,
                                 handwritten=handwritten, progress=progress, students=students)
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
    if _weakness(side.isolation) > _weakness(run.isolation):
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
    return _job_group_unavailable()


def _available_memory() -> int:
    """The kernel's estimate of the memory that could be used without swapping (MemAvailable), in bytes."""
    try:
        with open("/proc/meminfo") as f:
            return next(int(line.split()[1]) * 1024 for line in f if line.startswith("MemAvailable:"))
    except (OSError, StopIteration, ValueError):
        return 0


def _run_children(submission: Submission, tasks: list[Task], timeout_s: float, server: ForkServer, required: bool,
                  stop: threading.Event | None = None, races: Mapping[Task, Race] | None = None,
                  handwritten: frozenset[Task] = frozenset(), progress: Callable[[Task], object] | None = None,
                  students: _Students | None = None) -> Run:
    """``run_tasks`` for one set of tasks, in children one after another. ``stop``: another set runs in
    children of the same server at the same time (the caller sweeps up after both); when it is set, the
    other has failed, and this one stops (``_Stopped``)."""
    races = races or {}
    deadline = time.monotonic() + worst_case_s(tasks, timeout_s, races)
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
                                       f"{worst_case_s(tasks, timeout_s, races):.0f} s all its checks may take "
                                       "together")
                break
            out = ws.child_dir()
            batch, wall = ([alone], timeout_s * ALONE_WALL_FACTOR) if alone is not None else (pending, timeout_s)
            found, blamed, why, reported, starved = _one_child(server, ws, tasks, batch, broken, out, wall,
                                                               timeout_s * CPU_PER_WALL, left, stop, races,
                                                               handwritten, progress, students)
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
            if not run.isolation or _weakness(layers) > _weakness(run.isolation):
                run.isolation = layers  # the weakest child's, should they differ
            if required and layers["not_kernel"]:
                weak = layers["not_kernel"][0]
                raise IsolationRequired(f"the course requires isolation enforced by the kernel, and a grading child's "
                                        f"{weak} got {_held_by(layers, weak)}")
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
            if progress is not None:  # what the child did not answer: blamed, struck out or not run
                for i in pending:
                    if i in results and i not in found:
                        progress(tasks[i])
            pending = [i for i in pending if i not in results]
    finally:
        ws.remove()
    run.observations = {tasks[i]: results[i] for i in range(len(tasks))}
    return run


def worst_case_s(tasks: list[Task], timeout_s: float = TASK_TIMEOUT_S, races: Iterable[Task] = ()) -> float:
    """An upper bound on ``run_tasks``'s wall time, and the grader's own limit on it: every task runs
    to its timeout (a race takes ``RACE_TASKS`` tasks' time), and each of the crashes or hangs the strikes
    allow (one per probe and device) starts a child that takes as long as it may to start and is run again
    alone once."""
    starts = 1 + STRIKES * len({t.callable for t in tasks}) * len({t.device for t in tasks})
    weight = len(tasks) + (RACE_TASKS - 1) * len(set(races) & set(tasks))
    return weight * (timeout_s + 1) + starts * (START_TIMEOUT_S + timeout_s * ALONE_WALL_FACTOR)


@dataclass(frozen=True)
class Answer:
    """A child's answer to one request, timed by the grader from outside the child: ``data``, the result
    file's bytes (or why it was not read: a str; None: there was none); ``cpu_s``, the CPU time every thread
    of the child used while the request was out (for a timed request, exact: its threads' own counters,
    with those that came and went in between found by the process's total; otherwise that total alone, in
    clock ticks); ``own_s``, its own time: the wall clock from the request to the answer less the time its
    main thread sat runnable while the machine ran something else."""
    data: bytes | str | None
    cpu_s: float
    own_s: float
    timed: bool = False  # a race's round: its output may come raw (``protocol.RAW_TENSOR``)

    def observed(self) -> Any:
        """What came back, as plain data (``load_result``), or the error record of why not."""
        return load_result(self.data if self.data is not None else NO_RESULT, raw=self.timed)


class _Refused(Exception):
    """The grader refuses a task's answer (``record``, the check's error), from what it saw of the child."""

    def __init__(self, record: dict[str, Record]):
        super().__init__(record["error"]["message"])
        self.record = record


class _ChildFailed(Exception):
    """The child ended, or the watch stopped it, while a request was out: ``how`` it ended, in words,
    ``timeout`` (stopped for time), ``starved`` (it had waited for a CPU more than ``STARVED_SHARE`` of its
    time)."""

    def __init__(self, how: str, timeout: bool = False, starved: bool = False):
        super().__init__(how)
        self.how, self.timeout, self.starved = how, timeout, starved


def _one_child(server: ForkServer, ws: Workspace, tasks: list[Task], pending: list[int], broken: dict[str, str],
               out: Path, timeout_s: float, cpu_limit: float, left: float, stop: threading.Event | None = None,
               races: Mapping[Task, Race] | None = None, handwritten: frozenset[Task] = frozenset(),
               progress: Callable[[Task], object] | None = None, students: _Students | None = None
               ) -> tuple[dict[int, Any], int | None, dict[str, Record] | None, protocol.IsolationReport, bool]:
    """Run ``pending`` tasks in one child, asked for one at a time, each within ``timeout_s`` of its own
    time and ``cpu_limit`` CPU seconds, the whole child within ``left`` seconds; a race (``races``) against
    a child of the kit's own as well. Returns (the results of the tasks answered: index -> observation,
    the index blamed for an early end, its error, what the child reported of its isolation, whether the
    blamed task ran out of time on a busy machine)."""
    races = races or {}
    raced = [tasks[i] for i in pending if tasks[i] in races]
    if raced:
        server.start_now()  # whether it runs two children at once is known once it is ready
    if raced and not server.concurrent:
        raise GradingError(f"{raced[0].name} races the submission against the kit's own reference, in two children "
                           "at once, and this fork server runs one child at a time (its kernel has no pidfds: Linux "
                           "5.3 or later has them)")
    students = _Students() if students is None else students
    child = _Child(server, ws, out, broken, {tasks[i].device for i in pending}, timeout_s, cpu_limit, left, stop,
                   students=students)
    kit: _Child | None = None
    results: dict[int, Any] = {}
    try:
        # The kit's own child, where a race is to run, is started now: it confines itself beside the student's.
        kit = _Child(server, ws, ws.side_dir("kit"), {}, {t.device for t in raced}, timeout_s, cpu_limit, left, stop,
                     kit=True) if raced else None
        report = child.settle()
        for i in pending:
            task = tasks[i]
            try:
                if task in races:
                    assert kit is not None
                    results[i] = _drive(races[task], task, child, kit, students)
                else:
                    results[i] = child.ask(task, hand=task in handwritten)
            except _Refused as refused:  # not the child's answer: the grader's verdict on how it ran
                results[i] = refused.record
            except _ChildFailed as failed:
                return (child.observations(results), i, _blame(tasks, i, failed.how, failed.timeout), report,
                        failed.starved)
            if progress is not None:
                progress(task)
        return child.observations(results), None, None, report, False
    finally:
        if kit is not None:
            kit.close()
        child.close()


def _drive(race: Race, task: Task, child: _Child, kit: _Child, students: _Students) -> Any:
    """The observation of ``race``, run against ``child`` (the student's) and ``kit`` (the kit's own child).
    While the kit's child answers, every child of the student's (``students``: this one, and the one that
    runs the other checks beside it) is stopped: nothing of the student's runs beside the kit's reference
    while it is timed, on a core or in a cache it could share. A failure of the kit's own child, or of the
    race's code, is the grader's (``GradingError``); the student's child's is the race task's (``_ChildFailed``)."""
    def ask_student(name: str, seed: int | None) -> Answer:
        return child.ask(Task("probe", name, task.device), seed, keep=False)

    def ask_kit(name: str, seed: int | None) -> Answer:
        students.kit_answers = True  # first: a child of the student's started from now on stops at once
        for c in [c for c in list(students) if c is not kit]:
            c.pause()
        try:
            return kit.ask(Task("probe", name, task.device), seed, keep=False)
        except _ChildFailed as failed:
            raise GradingError(f"the kit's own child failed in {task.name}'s race: it {failed.how}") from None
        finally:
            students.kit_answers = False
            for c in list(students):
                c.resume()

    try:
        return race(ask_student, ask_kit)
    except (_ChildFailed, _Stopped, GradingError):
        raise
    except Exception as exc:  # noqa: BLE001  (the race's own code: never the student's loss)
        raise GradingError(f"the grader could not run {task.name}'s race: {type(exc).__name__}: {exc}") from exc


class _Students(list["_Child"]):
    """The student's children of one grading alive, in either lane (``_Child.students``), and whether the
    kit's own child is answering a race now (``kit_answers``): every one of them is stopped meanwhile."""

    kit_answers = False


class _Child:
    """One grading child, started by ``server`` in ``out`` and asked for one task at a time (``ask``). It
    is started, and its trusted set-up awaited, when made: where it never finishes that, no student code
    has run and the kit failed (``GradingError``). ``kit``: a child of the kit's own, which never imports
    the submission (a race's reference runs there)."""

    def __init__(self, server: ForkServer, ws: Workspace, out: Path, broken: dict[str, str], devices: set[str],
                 timeout_s: float, cpu_limit: float, left: float, stop: threading.Event | None = None,
                 kit: bool = False, students: _Students | None = None) -> None:
        self.server, self.ws, self.out, self.stop, self.kit = server, ws, out, stop, kit
        self.timeout_s, self.cpu_limit, self.deadline = timeout_s, cpu_limit, time.monotonic() + left
        self.budget, self.asked = workspace.CHILD_RESULTS_MAX_BYTES, 0
        self.paused_s = 0.0  # how long it has been stopped (``pause``): none of it is its own time
        self.paused_since: float | None = None
        self.decoded: dict[bytes, Any] = {}  # a result's bytes -> what ``load_result`` made of them
        self.undecoded: list[bytes] = []  # results read, to decode while the child works on (AHEAD_S a look)
        self.answered = b""  # of the answer FIFO: what has come and is not a whole line yet
        self.report: protocol.IsolationReport | None = None  # once its set-up is done (``settle``)
        self.held: int | None = None  # its group holds its tasks (``ask``): the count of refused starts then
        self.group: cgroups.JobGroup | None = None
        self.no_group: str | None = None
        self.proc: Child | None = None
        self.dropped = [out] if kit else []  # the folders of its own, removed when it has ended
        self.fifos = [ws.control / f"{out.name}.{end}" for end in ("ask", "answer")]
        self.asks = self.answers = -1
        # Where the kit's reference runs, every child of the student's is stopped (``_drive``); it leaves at close.
        self.students = students if students is not None and not kit else []
        self.students.append(self)
        beside = stop is not None
        try:
            self.group, self.no_group = _job_group()
            home = ws.side_dir("kit-home", home=True) if kit else ws.home
            if kit:
                self.dropped.append(home)
            for fifo in self.fifos:
                os.mkfifo(fifo, 0o600)
            # Both ends held here from the start (read and write), so that the child's opens never wait and
            # a child that dies leaves no end to write into: its end is seen through the fork server instead.
            self.asks, self.answers = (os.open(f, os.O_RDWR | os.O_NONBLOCK | os.O_CLOEXEC) for f in self.fifos)
            if beside and self.group is None:  # its stragglers could be told from the other child's by its group alone
                raise GradingError(f"a grading child beside another needs a control group of its own, and got none: "
                                   f"{self.no_group}")
            job = protocol.Job(
                submission=str(ws.empty if kit else ws.submission), sandbox=str(ws.root),
                secrets=[str(p) for p in workspace.secrets()],
                kit_parent=str(KIT_ROOT) if str(KIT_ROOT) not in workspace.site_paths() else None, uid=ws.uid,
                gid=ws.gid, limits=protocol.Limits(MEMORY_LIMIT, FILE_LIMIT, _cpu_backstop(left, cpu_limit, timeout_s),
                                                   EXTRA_PROCESSES),
                out=str(out), home=str(home),
                stash=str(ws.control / f"{out.name}.stash"), broken=broken, left_out={} if kit else ws.left_out,
                devices=sorted(devices), ask=str(self.fifos[0]), answer=str(self.fifos[1]), own_root=ws.own_root)
            job_path = ws.control / f"{out.name}.json"
            job.write(job_path)
            own_disk = None if ws.disk == workspace.TMPFS else (workspace.OUTPUT_BYTES, workspace.OUTPUT_INODES)
            self.proc = server.start(job_path, ws.control / f"{out.name}.stderr", out, ws.env(server.base_env()),
                                     tmpfs=own_disk)
            if getattr(self.students, "kit_answers", False):
                # Started (in the other lane) while the kit's child answers a race: stopped now, as the others
                # were (``_drive``). The flag is set before the others are stopped, and this child's process is
                # known before the flag is read, so either this or ``_drive`` stops it.
                self.pause()
            self.seen = self.proc.view(out)  # where the grader reads what the child wrote in ``out``
        except BaseException:
            self.close()
            raise

    def settle(self) -> protocol.IsolationReport:
        """Its isolation report, once its trusted set-up is done: waited for at the first call (the child
        confines itself meanwhile, beside whatever else runs)."""
        if self.report is None:
            assert self.proc is not None
            try:
                self.report = _with_grader_facts(self._settle(), self.group, self.no_group, self.proc.output_tmpfs)
            except BaseException:
                self.close()
                raise
        return self.report

    def _settle(self) -> bytes:
        """Wait for the child to stop itself at the end of its trusted set-up; read its isolation report then
        (no student code has run yet, so none can have rewritten it); move it into its cgroup; let it go on."""
        assert self.proc is not None
        started = time.monotonic()
        while True:
            try:
                code = self.proc.wait(timeout=SETUP_POLL_S)
            except subprocess.TimeoutExpired:
                pass
            else:  # ended before its set-up was done: no student code ran, the kit failed
                raise GradingError(f"the grader's child process failed to start ({_died(code, self.ws, self.out)})")
            if _stopped(self.proc.pid):
                self.threads = _threads(self.proc.pid)  # what its trusted set-up started: torch's, CUDA's
                layers = read_small(self.seen / protocol.LAYERS, limit=4000) or b"{}"
                if self.group is not None:
                    self.group.add(self.proc.pid)
                os.kill(self.proc.pid, signal.SIGCONT)
                return layers
            if time.monotonic() - started > START_TIMEOUT_S:
                raise GradingError(f"the grader's child process failed to start (it did not start within "
                                   f"{START_TIMEOUT_S:g} s)")
            if self.stop is not None and self.stop.is_set():
                raise _Stopped()

    def ask(self, task: Task, seed: int | None = None, keep: bool = True, hand: bool = False) -> Answer:
        """Ask the child for ``task`` (with ``seed``, for a timed probe), wait for its answer and read its
        result, timed from outside. Raises ``_ChildFailed`` where the child ends or the watch stops it first,
        ``GradingError`` where the machine kept it from running for ``BUSY_WALL_FACTOR`` times its time (no
        verdict is fair then), ``_Stopped`` where the other child of this grading failed. ``keep``: count the
        result against what one child may hand the grader (``CHILD_RESULTS_MAX_BYTES``): a race's outputs are
        compared and dropped.

        ``hand``: the task is of a stage written by hand. The child refuses library attention while it runs,
        with torch modes of the thread that runs it; a thread of the child's own would run beyond their
        reach, so on the CPU (and meta) the task runs with no thread but the child's own, seen from here: a
        thread left running refuses the task before it is asked (``_Refused``), the child's cgroup lets none
        start while it runs, and one that did start refuses its answer. (Every check that runs on CUDA runs on
        the CPU too, where the same code meets the same rule; on CUDA the driver may start threads of its own.)
        The group stays held from one such task to the next (the plan runs a stage's checks in a row), and is
        let go before any other task."""
        self.settle()
        assert self.proc is not None
        pid = self.proc.pid
        alone = hand and task.device != "cuda"
        if self.held is not None and not alone:
            self._let_go()
        if alone and self.held is None:  # held, nothing can have started since the last check
            self._alone_in(pid, "before this check ran: a thread it started earlier is still running")
            if self.group is not None:
                self.held = self.group.hold()
        answer = self._ask(pid, task, seed, keep, hand)
        if alone:
            if self.held is not None and self.group is not None:
                refused = self.group.refused()
                if refused > self.held:
                    self.held = refused
                    raise _Refused(_threaded("tried to start a thread while this check ran"))
            else:
                self._alone_in(pid, "while this check ran")
        return answer

    def _let_go(self) -> None:
        """Let the child's group start tasks again (``ask``'s hold)."""
        if self.held is not None and self.group is not None:
            self.group.release()
        self.held = None

    def _alone_in(self, pid: int, when: str) -> None:
        """Refuse the task (``_Refused``) where child ``pid`` runs more threads than its trusted set-up left.
        A thread that has just ended (joined) stays in ``/proc`` a moment: it is given ``GONE_WITHIN_S``."""
        until = time.monotonic() + GONE_WITHIN_S
        while (extra := _threads(pid) - self.threads) > 0 and time.monotonic() < until:
            time.sleep(0.001)
        if extra > 0:
            raise _Refused(_threaded(f"ran {extra} thread{'s' if extra > 1 else ''} besides its own {when}"))

    def _ask(self, pid: int, task: Task, seed: int | None, keep: bool, hand: bool) -> Answer:
        """``ask``'s request and its wait, without the rule on threads."""
        assert self.proc is not None
        self.asked += 1
        n = self.asked
        timed = seed is not None  # its CPU is read exactly: a race's round
        threads_before, coarse_before = (_thread_cpu(pid) if timed else {}), self._cpu_of_all()
        group_before = self.group.cpu_s() if timed and self.group is not None else None
        waited_before, since, paused_before = _waited(pid), time.monotonic(), self._paused()
        request = protocol.Request(n, task, seed, hand)
        try:
            os.write(self.asks, request.line())
        except BlockingIOError:  # its end of the FIFO is full: it wrote there itself, and reads none of it
            raise _ChildFailed("did not take its next request (the FIFO it reads them from was full)") from None
        while not self._answered(request, POLL_S if not self.undecoded else 0.0):
            code = self.proc.poll()
            if code is not None:  # ended on its own while the request was out
                out_of_memory = self.group is not None and self.group.ran_out_of_memory() and code == -signal.SIGKILL
                raise _ChildFailed(f"used more than {GROUP_MEMORY_LIMIT / 2**30:g} GiB of memory" if out_of_memory
                                   else _died(code, self.ws, self.out))
            now, (_, rss), cpu, waited = time.monotonic(), _usage(pid), self._cpu_of_all(), _waited(pid) - waited_before
            elapsed = now - since - (self._paused() - paused_before)  # while the kit's reference ran, stopped
            timed_out = f"timed out after {self.timeout_s:g} s"
            if elapsed - (waited if UNCHARGED_WAIT else 0.0) > self.timeout_s:
                raise _ChildFailed(timed_out, timeout=True, starved=waited > STARVED_SHARE * self.timeout_s)
            if cpu - coarse_before > self.cpu_limit:
                raise _ChildFailed(f"used more than {self.cpu_limit:g} s of CPU time", timeout=True)
            if elapsed > BUSY_WALL_FACTOR * self.timeout_s:
                # Its own doing, not the machine's: its threads kept it from the CPU, or it lowered its own
                # priority or narrowed its CPUs (allowed on itself) so as to wait and pass for starved. It
                # starts no process (the syscall filter), so its CPU time is all it runs.
                if cpu - coarse_before > self.timeout_s or _stood_aside(pid):
                    raise _ChildFailed(timed_out, timeout=True)
                raise GradingError(f"the machine was too busy to grade: one check waited {waited:.0f} s "
                                   f"of {elapsed:.0f} s for a CPU; grade again when it is quieter")
            if now > self.deadline:
                raise _ChildFailed("ran longer than all its checks may take together", timeout=True)
            if rss > GROUP_MEMORY_LIMIT:  # past what RLIMIT_AS lets it add: where it has none (CUDA), the bound
                raise _ChildFailed(f"used more than {GROUP_MEMORY_LIMIT / 2**30:g} GiB of memory", timeout=True)
            self._decode_some()
            if self.stop is not None and self.stop.is_set():
                raise _Stopped()
        own = (time.monotonic() - since - (self._paused() - paused_before)
               - ((_waited(pid) - waited_before) if UNCHARGED_WAIT else 0.0))
        coarse = self._cpu_of_all()
        group_after = self.group.cpu_s() if group_before is not None and self.group is not None else None
        if group_before is not None and group_after is not None:  # exact, threads that came and went included
            cpu_s = group_after - group_before
        elif timed:
            cpu_s = _cpu_between(threads_before, coarse_before, _thread_cpu(pid), coarse)
        else:
            cpu_s = coarse - coarse_before
        return Answer(self._result(request, keep), cpu_s, max(own, 0.0), timed)

    def _cpu_of_all(self) -> float:
        """CPU seconds of everything the child runs: its own, every thread's, where the syscall filter lets it
        start no process; else every process of its cgroup's (a process it started is counted in no CPU time
        of its own), where it has one."""
        assert self.proc is not None and self.report is not None
        if self.report.seccomp or self.group is None:
            return _usage(self.proc.pid)[0]
        return sum(_usage(pid)[0] for pid in self.group.members())

    def _answered(self, request: protocol.Request, timeout: float) -> bool:
        """Has the child answered ``request``, with its token? Waits up to ``timeout`` for it to say something.
        Lines that answer nothing asked (only the student's code writes those) are ignored."""
        if not select.select([self.answers], [], [], timeout)[0]:
            return False
        try:
            self.answered += os.read(self.answers, 1 << 16)
        except BlockingIOError:
            return False
        lines = self.answered.split(b"\n")
        self.answered = lines.pop()[-128:]  # a line's start; never more than an answer is long
        return request.answer_line().rstrip(b"\n") in lines

    def _result(self, request: protocol.Request, keep: bool) -> bytes | str | None:
        """The bytes of ``request``'s result, read once, as a regular file within its bounds."""
        limit = min(workspace.RESULT_MAX_BYTES, self.budget) if keep else workspace.RESULT_MAX_BYTES
        data = workspace.read_result(protocol.result_file(self.seen, request), limit)
        if isinstance(data, str) and limit < workspace.RESULT_MAX_BYTES:
            data = f"the results of one child may hold {workspace.CHILD_RESULTS_MAX_BYTES // 2**20} MiB together"
        if keep and isinstance(data, bytes):
            self.budget -= len(data)
            self.undecoded.append(data)
        return data

    def _decode_some(self) -> None:
        """Decode results read earlier while the child works on (the grading process would only wait;
        decoding 150 results takes 0.08 s), for at most ``AHEAD_S``."""
        stop = time.monotonic() + AHEAD_S
        while self.undecoded and time.monotonic() <= stop:
            data = self.undecoded.pop(0)
            self.decoded[data] = load_result(data)

    def observations(self, answers: dict[int, Any]) -> dict[int, Any]:
        """index -> observation, for ``answers`` (an ``Answer``, or a race's observation as it is)."""
        def observed(answer: Any) -> Any:
            if not isinstance(answer, Answer):
                return answer
            data = answer.data if answer.data is not None else NO_RESULT
            return self.decoded[data] if isinstance(data, bytes) and data in self.decoded else load_result(data)
        return {i: observed(a) for i, a in answers.items()}

    def pause(self) -> None:
        """Stop the child (every thread of it) until ``resume``: nothing of it runs meanwhile, and the time it
        is stopped is not its own (``_paused``): a task of its that was under way is charged none of it."""
        if self.proc is None or self.proc.returncode is not None or self.paused_since is not None:
            return
        self.paused_since = time.monotonic()
        with contextlib.suppress(ProcessLookupError):
            os.kill(self.proc.pid, signal.SIGSTOP)
        until = time.monotonic() + PAUSE_WITHIN_S
        while not _all_stopped(self.proc.pid) and time.monotonic() < until:
            time.sleep(0.0002)

    def resume(self) -> None:
        if self.paused_since is not None and self.proc is not None:
            with contextlib.suppress(ProcessLookupError):
                os.kill(self.proc.pid, signal.SIGCONT)
            self.paused_s += time.monotonic() - self.paused_since
            self.paused_since = None

    def _paused(self) -> float:
        """Seconds it has been stopped by ``pause``, so far."""
        since = self.paused_since
        return self.paused_s + (time.monotonic() - since if since is not None else 0.0)

    def close(self) -> None:
        """End the child and everything it left; remove its group and FIFOs. Raises ``GradingError`` where it
        outlives its kill."""
        ended = True
        if self in self.students:
            self.students.remove(self)
        try:
            if self.proc is not None:
                ended = _kill(self.proc)
                # Beside another child the user-wide sweep would end that one too: the removal of this child's
                # group below ends everything it started, and the caller sweeps once both have ended.
                self.server.kill_stragglers(self.proc.pid, everyone=self.stop is None)
        finally:
            if self.group is not None:
                self.group.remove()
                self.group = None
            for fd in (self.asks, self.answers):
                with contextlib.suppress(OSError):
                    os.close(fd)
            self.asks = self.answers = -1
            for fifo in self.fifos:
                fifo.unlink(missing_ok=True)
            for folder in self.dropped:
                self.ws.drop(folder)
            self.dropped = []
        if not ended:
            raise GradingError(f"a grading child outlived SIGKILL for {KILLED_WITHIN_S} s")


PAUSE_WITHIN_S = 1.0  # for a child sent SIGSTOP to show every thread stopped (microseconds, as a rule)
GONE_WITHIN_S = 0.05  # for a thread that has ended to leave /proc/<pid>/task (it stayed there 0.2 s at most, seen)


def _cpu_backstop(left: float, cpu_limit: float, timeout_s: float) -> float:
    """RLIMIT_CPU of a child: the kernel's backstop under the grader's own limits, never what stops an honest
    child first. The most CPU its tasks could take at ``cpu_limit`` each within ``left`` seconds, and two more."""
    return cpu_limit * (left / timeout_s + 2)


def _thread_cpu(pid: int) -> dict[str, int]:
    """{thread id: its CPU time in ns} of process ``pid``, from each thread's schedstat: exact, but only of
    the threads there now. Empty where they cannot be read."""
    threads: dict[str, int] = {}
    try:
        for tid in os.listdir(f"/proc/{pid}/task"):
            try:
                with open(f"/proc/{pid}/task/{tid}/schedstat", "rb") as f:
                    threads[tid] = int(f.read().split()[0])
            except (OSError, IndexError, ValueError):
                pass
    except OSError:
        pass
    return threads


def _cpu_between(threads_before: dict[str, int], total_before: float, threads_after: dict[str, int],
                 total_after: float) -> float:
    """The CPU seconds a child used between two readings: what its threads' own counters say (``_thread_cpu``),
    or, where its total grew by more, that total (``_Child._cpu_of_all``: the process's own, which counts
    threads that started and ended in between, which no reading of threads shows; or its cgroup's). The
    total is counted in whole clock ticks, so a difference of two readings is within a tick of the truth:
    it decides where it outgrew the threads' sum by more than that. (Where the child has a cgroup, its CPU
    is read there instead, exactly: ``JobGroup.cpu_s``.)"""
    exact = sum(ns - threads_before.get(tid, 0) for tid, ns in threads_after.items()) / 1e9
    total = total_after - total_before
    return total if total > exact + 1 / _TICKS else max(exact, 0.0)


def _threads(pid: int) -> int:
    """The threads process ``pid`` has now (0 where it has gone)."""
    try:
        return len(os.listdir(f"/proc/{pid}/task"))
    except OSError:
        return 0


def _threaded(what: str) -> dict[str, Record]:
    """The error of a check of a stage written by hand whose code ran threads of its own (``what``)."""
    return error("Threads", f"the submission {what}. In a stage written by hand, grading checks that no "
                 "library attention is used, and it can see only the thread it runs your code in, so this check "
                 "does not count: start no threads (threading, concurrent.futures, asyncio.to_thread, "
                 "multiprocessing.pool) in this stage's code")


def _all_stopped(pid: int) -> bool:
    """Is every thread of process ``pid`` stopped (or gone)?"""
    try:
        tids = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return True
    return all(linux.proc_stat(f"{pid}/task/{tid}")[:1] in ([b"T"], [b"t"], []) for tid in tids)


def _job_group_unavailable() -> str | None:
    """Why a child gets no cgroup here (``_job_group``), or None when it gets one."""
    group, why = _job_group()
    if group is not None:
        group.remove()
    return why


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
    """(CPU seconds, resident bytes) of process ``pid``, every thread of it, ended ones too; zeros when it
    cannot be read."""
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


def _layers(reported: protocol.IsolationReport, ws: Workspace, timeout_s: float) -> Isolation:
    """What protected this run, for the report: for each resource (files, network, processes,
    memory, disk, IPC) what held it and whether that was the kernel. ``files`` is ``KERNEL`` when
    the kernel enforces the child's allow-list (Landlock, or a root of its own with no privileges
    left), else ``PYTHON``; ``not_kernel`` names the resources that only Python, or nothing whole,
    guards (``--require-isolation`` refuses to grade with any); ``missing`` the kit's kernel layers
    that did not hold the child, with why, and ``lost`` the resources each of them would have held.
    ``reported``: the child's report, with the grader's facts (``_with_grader_facts``)."""
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
    lost = {"files": ["namespaces"] * (not root) + ["landlock"] * (not abi),
            **{name: gone for name, (_, _, gone) in resources.items()}}
    return {
        "user": f"uid {ws.uid} (unprivileged)" if ws.uid is not None else "the grading user (not root)",
        "files": KERNEL if kernel else PYTHON,
        "filesystem": (("only its own submission, Python and its libraries, enforced by " + " and ".join(enforced))
                       if kernel else "blocked in Python only (its audit hook): native code can read and write "
                       "whatever the grading user can") + ("" if not missing else f" ({'; '.join(missing)})"),
        "network": resources["network"][0],
        "processes": resources["processes"][0],
        "memory": resources["memory"][0],
        "disk": resources["disk"][0],
        "ipc": resources["ipc"][0],
        "limits": (f"{timeout_s:g} s and {timeout_s * CPU_PER_WALL:g} CPU-s per task, "
                   f"{MEMORY_LIMIT / 2**30:g} GiB, {FILE_LIMIT // 2**20} MiB files"),
        "not_kernel": ["files"] * (not kernel) + [name for name, (_, held, _) in resources.items() if not held],
        "missing": {layer: _why_missing(reported, layer)
                    for layer in dict.fromkeys(layer for name in RESOURCES for layer in lost[name])},
        "lost": {name: lost[name] for name in RESOURCES if lost[name]},
    }


def _why_missing(reported: protocol.IsolationReport, layer: str) -> str:
    """Why ``layer`` (one of ``protocol.KERNEL_LAYERS``) did not hold the child, in words: the child's
    own report of it, or for the namespaces, which of them it went without."""
    if layer == "namespaces":
        kinds = [kind for kind, there in (("network", reported.network), ("IPC", reported.ipc),
                                          ("PID", reported.pids)) if not there]
        gaps = [f"no {_listed(kinds, 'or')} namespace"] * bool(kinds)
        gaps += [f"no root of its own: {reported.root_why or 'no mount namespace'}"] * (not reported.root)
        return "; ".join(gaps)
    why = {"landlock": reported.landlock_why, "seccomp": reported.seccomp_why, "cgroup": reported.cgroup_why}
    return why[layer] or "not tried"


def _listed(words: list[str], last: str = "and") -> str:
    """``["a", "b", "c"]`` as "a, b and c"."""
    return f"{', '.join(words[:-1])} {last} {words[-1]}" if len(words) > 1 else "".join(words)


def _resources(reported: protocol.IsolationReport, ws: Workspace,
               abi: int) -> dict[str, tuple[str, bool, list[str]]]:
    """resource -> (what held it, in words; whether a kernel layer held all of it; the kit's kernel
    layers, of ``protocol.KERNEL_LAYERS``, that would have held it too and did not). The child reports
    its own layers before any student code runs; the cgroup and the workspace's disk are the grader's."""
    seccomp, cgroup = reported.seccomp, reported.cgroup
    no_seccomp = f"no syscall filter: {reported.seccomp_why or 'not tried'}"
    filtered = "seccomp"

    if reported.network:
        network = "none (its own network namespace)", True
    elif seccomp:
        network = f"Unix sockets only ({filtered}; no network namespace: refused)", True
    else:
        network = f"blocked in Python only ({no_seccomp}; no network namespace)", False
    network_lost = ["namespaces"] * (not reported.network) + ["seccomp"] * (not seccomp)

    held = ["its own PID namespace" if reported.pids else "no PID namespace (the kernel refused one)"]
    held += [f"no call on another process ({filtered})"] * seccomp
    held += ["signals kept inside its Landlock domain"] * (abi >= 6)
    held += [f"another user (uid {ws.uid})"] * (ws.uid is not None)
    if cgroup:
        held.append(f"at most {EXTRA_PROCESSES + JOB_BASE_TASKS} tasks (cgroup)")
    else:
        held.append(f"{EXTRA_PROCESSES} more tasks (RLIMIT_NPROC; no cgroup: {reported.cgroup_why})")
    processes = "; ".join(held), seccomp or reported.pids or ws.uid is not None and abi >= 6
    processes_lost = (["namespaces"] * (not reported.pids) + ["landlock"] * (not abi) + ["seccomp"] * (not seccomp)
                      + ["cgroup"] * (not cgroup))

    if cgroup:
        memory = (f"{MEMORY_LIMIT / 2**30:g} GiB of address space a process (RLIMIT_AS), "
                  f"{GROUP_MEMORY_LIMIT / 2**30:g} GiB "
                  "counting every page it holds (cgroup)"), True
    elif seccomp:
        memory = (f"{MEMORY_LIMIT / 2**30:g} GiB of address space (RLIMIT_AS) with memfd_create refused ({filtered}); "
                  f"no cgroup: {reported.cgroup_why}"), True
    else:
        memory = (f"{MEMORY_LIMIT / 2**30:g} GiB of address space (RLIMIT_AS), not counting memfd or tmpfs pages "
                  f"({no_seccomp}; no cgroup: {reported.cgroup_why})"), False
    memory_lost = ["seccomp"] * (not seccomp) + ["cgroup"] * (not cgroup)

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
    # Where the grader mounts no tmpfs of its own (an ordinary user, a container that refuses it), the
    # child's home is a tmpfs in its own root, and its output folder one in the fork server's namespace.
    disk_lost = ["namespaces"] * (not disk[1] and not reported.root)

    held_ipc = ["its own IPC namespace"] * (reported.ipc)
    held_ipc += [f"SysV and POSIX IPC and keyrings refused ({filtered})"] * seccomp
    held_ipc += ["a fresh session keyring"] * (reported.keyring)
    ipc = ("; ".join(held_ipc) or "shared with the grading user (no IPC namespace, no syscall filter)",
           reported.ipc or seccomp)
    ipc_lost = ["namespaces"] * (not reported.ipc) + ["seccomp"] * (not seccomp)
    return {"network": (*network, network_lost), "processes": (*processes, processes_lost),
            "memory": (*memory, memory_lost), "disk": (*disk, disk_lost), "ipc": (*ipc, ipc_lost)}


KERNEL, PYTHON = "kernel", "python"
RESOURCES = ("files", "network", "processes", "memory", "disk", "ipc")


def _weakness(isolation: Isolation) -> tuple[int, int, int]:
    """How far a child's isolation fell short, to keep the weakest of a grading's children: resources no
    kernel layer held first, then the kit's layers missing, then the resources they would have held."""
    return (len(isolation.get("not_kernel", ())), len(isolation.get("missing", {})),
            sum(map(len, isolation.get("lost", {}).values())))


def _held_by(isolation: Mapping[str, Any], resource: str) -> str:
    """What held ``resource`` (one of ``RESOURCES``), in words."""
    return str(isolation.get("filesystem" if resource == "files" else resource, ""))


def shortfall(isolation: Mapping[str, Any]) -> str | None:
    """What a grading's child lacked of the kit's layers, in one sentence for the person who can fix it,
    or None where every resource was held by every layer the kit has. One sentence for every place that
    says it: the warning of every command that grades, ``isolation_line``, the ``output`` of Gradescope's
    results.json and grade-all's summary. ``isolation``: an ``Isolation``, or a record's copy of one."""
    missing, lost, weak = isolation.get("missing") or {}, isolation.get("lost") or {}, isolation.get("not_kernel") or []
    if not (missing or weak):
        return None
    fewer = [name for name in RESOURCES if name in lost and name not in weak]
    said = [f"{_listed(fewer)} held by fewer layers than the kit has"] * bool(fewer)
    said += [f"{name} held by no kernel layer ({_held_by(isolation, name)})" for name in weak]
    without = _listed([f"{layer} ({why})" for layer, why in missing.items()])
    return (f"graded without {without}: " if missing else "") + "; ".join(said)


def isolation_line(isolation: Isolation, verbose: bool = False) -> str:
    """The line a grading prints on stderr: one short line where every resource was held by every layer
    the kit has; a loud one naming what was not (``shortfall``) where any was missing; with ``verbose``,
    each resource with what held it, as results.json always has it."""
    if not isolation:
        return "isolation: not known (nothing was run)"
    said = shortfall(isolation)
    if verbose:
        held = "; ".join(f"{name}: {_held_by(isolation, name)}" for name in RESOURCES)
        return (f"isolation: user: {isolation.get('user')}; {held}; limits: {isolation.get('limits')}"
                + (f" [MISSING: {said}]" if said else " [every resource held by every layer the kit has]"))
    if said:
        return f"isolation: WARNING: {said} (--verbose: what held each resource)"
    return (f"isolation: every resource held by every layer the kit has ({', '.join(protocol.KERNEL_LAYERS)}), "
            f"as {isolation.get('user')} (--verbose: what held each)")


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
