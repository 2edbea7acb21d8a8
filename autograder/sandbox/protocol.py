"""What the grader and a grading child say to each other, spelled once for both ends.

The grader writes a ``Job`` (JSON) into the workspace's control folder, makes two FIFOs beside it
(``Job.ask`` and ``Job.answer``) and asks the fork server for a child. The child opens both during its
trusted set-up, writes what protected it to ``LAYERS`` in its output folder and stops itself until
the grader has read that. Then the grader asks for one task at a time: a ``Request`` line on ``ask``,
with a token made for it alone; the child runs it, writes one file of plain data,
``result_file(out, request)``, atomically, and answers the request's ``answer_line``. The grader reads
that one file, of the task it asked for, and nothing else: a result the child wrote ahead of time, or for
a request never made, counts for nothing, and so does an answer without the request's token, which only
a reader of the request has (the grader holds the FIFO's only other end).
The fork server answers ``ready``, then ``started <pid>`` and ``ended <exit code>`` per request.
"""
from __future__ import annotations

import json
import os
import secrets
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

START_TIMEOUT_S = 60.0  # for the fork server to start, and for a child to finish its trusted set-up
LAYERS = "layers.json"
REQUEST_MAX_BYTES = 4096  # a request line: a task's names and a seed; anything longer is not one
# The kernel's layers a child tries: namespaces (network, mounts, IPC, and its own root in them),
# Landlock and the seccomp filter; and the one the grader puts it in, a cgroup. The tests take some
# away to grade as a machine without them would.
KERNEL_LAYERS = ("namespaces", "landlock", "seccomp", "cgroup")
PROBES = "autograder.probes"  # the module a child imports, by name, to run probes: see ``Job.probes``


def result_file(out: Path, request: Request) -> Path:
    return Path(out) / f"{request.n}.{request.token}.pt"


# A timed request's output (a race's round: one tensor of 2 MiB) is written raw, not by torch.save: this
# line, then a line of JSON ({"dtype": "float32", "shape": [...]}), then the tensor's bytes. Reading it
# back is a header and a copy (torch.save's zip is read record by record and written again, 4 ms for
# this size, in the grading process, ten times a race). Only where the request was timed.
RAW_TENSOR = b"attention-lab raw tensor\n"
RAW_HEADER_MAX_BYTES = 256
RAW_DTYPES = ("float32", "float64", "float16", "bfloat16")  # the dtypes a timed output may have, by torch's names


@dataclass(frozen=True)
class Task:
    kind: str  # "import" or "probe"
    name: str  # module name or probe name
    device: str = "cpu"

    @property
    def stage(self) -> str:
        """Probes are named ``s<stage>.<what>``; a crash while importing breaks only that module."""
        return self.name.split(".")[0] if self.kind == "probe" else f"import {self.name}"

    @property
    def callable(self) -> str:
        """What the probe calls, by its name ``s<stage>.<callable>.<what>`` (``s3.causal.seeded``:
        stage 3's CausalAttention; ``s1.softmax_naive``: that function): strikes are counted per
        callable, so code that hangs stops the checks that call it, and no others."""
        return ".".join(self.name.split(".")[:2]) if self.kind == "probe" else f"import {self.name}"


@dataclass(frozen=True)
class Request:
    """The grader's ``n``-th request to a child: run ``task``; ``seed``: for a timed probe, which input
    to make (None: build what it times, and warm it up); ``hand``: the task belongs to a stage written by
    hand, so library attention is refused while it runs (``confine.HandWritten``). One line of JSON on the
    ``ask`` FIFO."""
    n: int
    task: Task
    seed: int | None = None
    hand: bool = False
    token: str = field(default_factory=lambda: secrets.token_hex(8))  # this request's alone: see ``answer_line``

    def line(self) -> bytes:
        return (json.dumps({"n": self.n, "task": asdict(self.task), "seed": self.seed, "hand": self.hand,
                            "token": self.token}) + "\n").encode()

    def answer_line(self) -> bytes:
        """What the child says on ``answer`` once this request's result is written: its number and token."""
        return f"{self.n} {self.token}\n".encode()

    @classmethod
    def parse(cls, line: bytes, loads: Callable[[bytes], Any] = json.loads) -> "Request | None":
        """The request on ``line``, or None for anything else (what the student's code might write to the
        FIFO is no request the grader made, and is ignored). ``loads``: json's, as it was when this module
        was imported, before any student code ran (a submission that replaced ``json.loads`` could
        otherwise rewrite the requests the child reads)."""
        try:
            data = loads(line)
            task, n, seed, hand, token = Task(**data["task"]), data["n"], data["seed"], data["hand"], data["token"]
        except (ValueError, TypeError, KeyError):
            return None
        if type(n) is not int or not (seed is None or type(seed) is int) or type(hand) is not bool or not (
                type(token) is str and 0 < len(token) <= 64 and token.isalnum() and token.isascii()) or not all(
                type(v) is str for v in asdict(task).values()):
            return None
        return cls(n, task, seed, hand, token)


def requests(fd: int, read: Callable[[int, int], bytes] = os.read) -> Iterator[Request]:
    """The requests read from ``fd`` (the child's end of ``ask``), one at a time, until the grader closes
    its end. Blocks between them: the child waits for the grader. ``read``: ``os.read`` as it was when this
    module was imported, before any student code ran (see ``Request.parse``)."""
    pending = b""
    while True:
        chunk = read(fd, 1 << 16)
        if not chunk:
            return
        pending += chunk
        while b"\n" in pending:
            line, pending = pending.split(b"\n", 1)
            request = Request.parse(line) if len(line) <= REQUEST_MAX_BYTES else None
            if request is not None:
                yield request
        pending = pending[-REQUEST_MAX_BYTES:]


@dataclass(frozen=True)
class Limits:
    memory: int  # bytes of address space on top of what the child holds when it confines itself
    file: int  # bytes of any one file it writes
    cpu_total: float  # CPU seconds of the whole child (RLIMIT_CPU): a backstop under the grader's limit per task
    processes: int  # threads and processes beyond those it has when it confines itself


@dataclass
class Job:
    submission: str  # the folder that holds the copied attention_lab/
    sandbox: str  # the only folder the child may write in
    secrets: list[str]  # folders it may not read
    kit_parent: str | None  # the kit's checkout, taken off the child's import path (None: not on it)
    uid: int | None  # the user it becomes (None: it stays who it is)
    gid: int | None
    limits: Limits
    out: str  # where it writes LAYERS and the results
    home: str  # its HOME and TMPDIR: the one folder besides ``out`` it may write
    stash: str  # where it builds its own root (see ``world.own_root``)
    broken: dict[str, str]  # module -> why it is not imported again
    # module -> why intake did not read its file (a link, a FIFO): said by every check that needs it
    left_out: dict[str, str]
    devices: list[str]  # those its tasks may run on ("cuda" is started in its trusted set-up)
    ask: str  # the FIFO it reads requests from
    answer: str  # the FIFO it answers on
    probes: str = PROBES
    own_root: bool = False  # the grading process found that children can have a root of their own
    layers: list[str] = field(default_factory=lambda: list(KERNEL_LAYERS))  # those of KERNEL_LAYERS to try

    def write(self, path: Path) -> None:
        Path(path).write_text(json.dumps(asdict(self)))

    @classmethod
    def read(cls, path: Path) -> "Job":
        data = json.loads(Path(path).read_text())
        data["limits"] = Limits(**data["limits"])
        return cls(**data)


@dataclass(frozen=True)
class IsolationReport:
    """What held a child: what it says of itself in ``LAYERS`` at the end of its trusted set-up (stopped
    until the grader has read it, before any student code runs), and what the grader made for it, which
    the child cannot say (``cgroup``, ``output``). A field left out reads as the layer missing."""

    user: int | None = None  # the uid it became (None: it stayed the grading process's user)
    network: bool = False  # a network namespace of its own
    mounts: bool = False  # a mount namespace of its own
    ipc: bool = False  # an IPC namespace of its own
    pids: bool = False  # the fork server's PID namespace
    keyring: bool = False  # a fresh session keyring
    root: bool = False  # a root of its own (``world.own_root``)
    root_why: str = ""
    home: str = ""  # "tmpfs": its home is a tmpfs of its own
    landlock: int = 0  # Landlock's ABI, 0 for none
    landlock_why: str = ""
    capabilities: str = ""  # root's, given up before it became the grading user: "dropped" or "kept"
    threads: int = 1  # its threads when Landlock bound it
    seccomp: bool = False  # the syscall filter
    seccomp_why: str = ""
    cgroup: bool = False  # the grader's: a control group of its own
    cgroup_why: str | None = None
    output: str = ""  # the grader's: "tmpfs" when the fork server mounted its output folder as one

    def to_json(self) -> str:
        return json.dumps(asdict(self))

    @classmethod
    def from_json(cls, text: bytes | str | None) -> "IsolationReport":
        """The report as written; anything that is not JSON of an object, or a field of another type than
        its own, reads as that field left out."""
        try:
            data = json.loads(text or b"{}")
        except ValueError:
            data = {}
        if not isinstance(data, dict):
            return cls()
        kinds = {"user": (int, type(None)), "cgroup_why": (str, type(None))}
        kept: dict[str, Any] = {}  # each value checked against its field's type below
        for name, default in asdict(cls()).items():
            value, kind = data.get(name, default), kinds.get(name, (type(default),))
            if isinstance(value, kind) and not (isinstance(value, bool) and bool not in kind):  # True is an int too
                kept[name] = value
        return cls(**kept)
