"""The grader's end of the fork server: a process that has imported torch and the probes once and
forks a fresh child per request (its loop is ``server.py``).

Starting a grading child from nothing means importing torch (nearly a second here); forking a
process that has done it takes milliseconds.
The forked child then confines itself exactly as a fresh one would (``child.main``).

The server also owns the identity its children run as, so that after each child the grader
can kill whatever that child left behind without touching anyone else's processes: as root, a
grading user id of its own (one of ``SLOTS``, claimed with a lock, so that gradings running side
by side never share one); otherwise a mark in the environment that every descendant inherits.

Both ends die together: the server gets SIGKILL when the grader that started it dies (even by
``kill -9``), and a child when its server dies, so an interrupted grading leaves nothing running.
"""
from __future__ import annotations

import fcntl
import json
import os
import secrets as tokens
import select
import signal
import stat
import subprocess
import sys
import threading
import time
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

from ..errors import GradingError
from ..paths import KIT_ROOT
from . import linux, protocol, workspace
from .protocol import PROBES, START_TIMEOUT_S

SLOTS = range(workspace.CHILD_UID, workspace.CHILD_UID + 32)  # 65500-65531: owned by nobody
READ_SLICE_S = 0.01  # the longest one waiter holds the server's output while another may be waiting for a line
_T = TypeVar("_T")


class ForkServer:
    """Start one with ``with ForkServer() as server:``; ``start`` forks a child, one at a time.

    ``meta``: warm the meta device up in the server (0.25 s, once), for a server that many children
    share; without it, each child's first task on that device pays it, and a child with none does not."""

    def __init__(self, meta: bool = False, threads: int | None = None, beside: bool = True) -> None:
        self.meta, self.threads = meta, threads
        # May a grading run a task apart, in a child beside its others (``runner.room_beside``)? Not where
        # several gradings share the machine already (grade-all's workers): the cores are theirs.
        self.beside = beside
        # The grader cannot mount a tmpfs for a child's output folder unless it is root: the server
        # then tries a mount namespace of its own for them (``server.serve``'s ``private``).
        self.private = not workspace.is_root()
        self.pids = "namespaces" in protocol.KERNEL_LAYERS  # the children's PID namespace is the server's to make
        self.init: int | None = None  # the pid of the init of the children's PID namespace, where there is one
        self._ready = False  # it has said it is ready
        self.uid = self.gid = None
        self._lock: int | None = None
        self.proc: subprocess.Popen[bytes] | None = None
        self.mark = f"ATTENTION_LAB_RUN={tokens.token_hex(8)}"
        # Two children may run at once (``runner.run_tasks``'s ``apart``), each watched from a thread of its
        # own: one request and its answer at a time, one reader of the server's lines at a time, and a line
        # read for another waiter kept for it.
        self.concurrent = False  # the server runs several children at once, and says which one ended
        self._talking, self._reading = threading.Lock(), threading.Lock()
        self._ended: dict[int, int] = {}  # pid -> exit code, read by a waiter other than the child's
        self._started: list[str] = []  # a "started" answer, read by a waiter other than the starter
        self._gone = False  # the server's output has ended
        if workspace.is_root():
            self.uid, self._lock = claim_slot()
            self.gid = self.uid
            self.kill_stragglers(None)  # left by a grading that was killed while it held this slot

    def __enter__(self) -> ForkServer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def base_env(self) -> dict[str, str]:
        """What every child's environment starts from (``Workspace`` adds its HOME and TMPDIR)."""
        passed = {k: v for k, v in os.environ.items()
                  if k.startswith(("CUDA_", "NVIDIA_", "OMP_", "MKL_", "OPENBLAS_")) or k == "LD_LIBRARY_PATH"}
        name, value = self.mark.split("=")
        # numpy's BLAS starts its threads at import; a fork copies only one, so start none.
        # USER and LOGNAME: getpass.getuser() asks them first; the grading user has no /etc/passwd entry.
        return {"OPENBLAS_NUM_THREADS": "1", **passed, "PATH": "/usr/bin:/bin", "LANG": "C.UTF-8", "USER": "grader",
                "LOGNAME": "grader", name: value}

    def boot(self) -> ForkServer:
        """Start the server's process and return at once: its imports (torch, the probes) then run
        beside the grading process's own. ``start`` waits for it to be ready."""
        if self.proc is not None and self.proc.poll() is None:
            return self
        if self.uid is not None and self._lock is None:  # closed: its grading user may be another grading's now
            raise GradingError("this fork server was closed: its grading user is no longer held")
        self._end_process()  # one that has ended: its pipes and error output
        paths = [str(KIT_ROOT)] + [p for p in workspace.site_paths() if p != str(KIT_ROOT)]
        boot = (f"import sys; sys.path[:0] = {paths!r}; from autograder.sandbox.server import serve; "
                f"serve({self.meta!r}, {self.threads!r}, {PROBES!r}, {self.private!r}, {self.pids!r})")
        self._stderr = tempfile.TemporaryFile()
        self.proc = subprocess.Popen(
            [sys.executable, "-I", "-S", "-c", boot], env=self.base_env(), bufsize=0,
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self._stderr, cwd="/",
        )
        self._ready = False
        return self

    def start_now(self) -> None:
        """Start the server, if it has not started, and wait until it is ready (``concurrent`` is known then)."""
        with self._talking:
            self._ensure_running()

    def _ensure_running(self) -> None:
        self.boot()
        if self._ready:
            return
        answer = (self._read(START_TIMEOUT_S) or "").split()
        if answer[:1] != ["ready"]:
            words = self._last_words()
            self._end_process()  # the slot stays held until the server is closed: a child beside may still be watched
            raise GradingError(f"the grader's fork server did not start: {words}")
        self._ready = True
        self.init = int(answer[answer.index("init") + 1]) if "init" in answer else None
        self.concurrent = "concurrent" in answer

    def _read(self, timeout: float) -> str | None:
        """The server's next line, None on timeout, "" when it has gone."""
        assert self.proc is not None and self.proc.stdout is not None
        ready, _, _ = select.select([self.proc.stdout], [], [], timeout)
        if not ready:
            return None
        return self.proc.stdout.readline().decode(errors="replace").strip()

    def _answer(self, mine: Callable[[], _T | None], timeout: float | None) -> _T | None:
        """What ``mine()`` finds among the server's lines (None: not there yet), reading them as they
        come for at most ``timeout`` seconds (None on timeout); a line meant for another waiter is kept
        for it (``ended <code> <pid>``, ``started``, the end of the output)."""
        end = time.monotonic() + timeout if timeout is not None else None
        while True:
            with self._reading:
                found = mine()
                if found is not None:
                    return found
                left = READ_SLICE_S if end is None else min(READ_SLICE_S, max(0.0, end - time.monotonic()))
                line = self._read(left)  # a slice at a time: another waiter may want to look
                if line is None:
                    if end is not None and time.monotonic() >= end:
                        return None
                    continue
                self._keep(line)

    def _keep(self, line: str) -> None:
        """Keep a line of the server's for its waiter."""
        if line == "":
            self._gone = True
        elif line.startswith("ended "):
            code, pid = line.split()[1:3]
            self._ended[int(pid)] = int(code)
        elif line.startswith("started "):
            self._started.append(line)

    def _said_started(self) -> str | None:
        if self._started:
            return self._started.pop(0)
        return "" if self._gone else None

    def _last_words(self) -> str:
        self._stderr.seek(0)
        lines = self._stderr.read()[-2000:].decode(errors="replace").strip().splitlines()
        assert self.proc is not None
        code = self.proc.poll()
        return (lines[-1] if lines else "no error output") + (f" (exit code {code})" if code is not None else "")

    def start(self, job: os.PathLike[str] | str, stderr: os.PathLike[str] | str, cwd: os.PathLike[str] | str,
              env: dict[str, str], tmpfs: tuple[int, int] | None = None) -> Child:
        """Fork a child that runs ``job`` in ``cwd`` (its output folder); ``tmpfs``: (bytes, files) to
        bound that folder by, where the server mounts it."""
        request = (json.dumps({"job": str(job), "stderr": str(stderr), "cwd": str(cwd), "env": env, "tmpfs": tmpfs})
                   + "\n").encode()
        with self._talking:
            return self._start(request)

    def _start(self, request: bytes) -> Child:
        for again in (True, False):
            self._ensure_running()
            assert self.proc is not None and self.proc.stdin is not None
            try:
                self.proc.stdin.write(request)
            except BrokenPipeError:
                answer: str | None = ""
            else:
                answer = self._answer(self._said_started, START_TIMEOUT_S)
            # "": it has ended (it died since the last child, or its PID namespace did): start another, once
            if answer == "" and again:
                self._end_process()
                continue
            if not (answer or "").startswith("started "):
                words = self._last_words()
                self._end_process()
                raise GradingError(f"the grader's fork server did not fork a child: {words}")
            assert answer is not None
            return Child(self, int(answer.split()[1]), answer.endswith(" tmpfs"))
        raise AssertionError("unreachable: the second try returns or raises")

    def kill_stragglers(self, pgid: int | None, everyone: bool = True) -> None:
        """Kill what a finished child left running: its process group, and (``everyone``) every process
        that escaped it (the slot's user id as root; the server's mark otherwise, the server spared)."""
        if pgid is not None:
            linux.kill_group(pgid)
        if not everyone:
            return
        spare = {self.proc.pid, self.init} if self.proc is not None else set()

        def stragglers() -> list[int]:
            found = linux.processes_of(self.uid) if self.uid is not None else linux.marked(self.mark)
            return [pid for pid in found if pid not in spare]

        linux.kill_until_gone(stragglers, rounds=100, pause=0.01)

    def _end_process(self) -> None:
        """Stop the server's process (if it runs) and close what the grader held of it."""
        with self._reading:  # no waiter is reading its output while it is closed
            self._stop()
        self._ended, self._started, self._gone = {}, [], False

    def _stop(self) -> None:
        if self.proc is not None:
            if self.proc.poll() is None:
                self.proc.kill()
            self.proc.wait()
            assert self.proc.stdin is not None and self.proc.stdout is not None
            self.proc.stdin.close()
            self.proc.stdout.close()
            self._stderr.close()
            self.proc = None
        if self.init is not None:
            # The children's PID namespace's init ends with the server (its parent-death signal). Where this
            # process is a subreaper (the runner makes it one) the init was handed to it: reaped here, or it
            # stays a zombie child as long as this process lives (a Jupyter kernel that graded a notebook
            # then spent 2.5 s of its shutdown trying to end it).
            linux.reap_orphan(self.init, timeout_s=1.0)
            self.init = None

    def close(self) -> None:
        self._end_process()
        if self._lock is not None:
            os.close(self._lock)  # frees the slot
            self._lock = None


class Child:
    """A forked child, as the runner watches it (the part of ``subprocess.Popen`` it uses)."""

    returncode: int | None

    def __init__(self, server: ForkServer, pid: int, output_tmpfs: bool = False) -> None:
        self.server, self.pid, self.returncode = server, pid, None
        self._of = server.proc  # the server process that forked it: if another has replaced it, it has ended
        assert server.proc is not None
        # Its output folder is a tmpfs in the server's mount namespace: seen through the server's root.
        self.output_tmpfs, self._root = output_tmpfs, f"/proc/{server.proc.pid}/root"

    def view(self, path: os.PathLike[str] | str) -> Path:
        """Where the grader finds ``path`` as the child wrote it."""
        return Path(self._root + str(path)) if self.output_tmpfs else Path(path)

    def wait(self, timeout: float | None = None) -> int:
        if self.returncode is None:
            code = self.server._answer(self._said_ended, timeout)
            if code is None:
                assert timeout is not None  # without one, ``_answer`` waits until it is said
                raise subprocess.TimeoutExpired("grading child", timeout)
            self.returncode = code
        return self.returncode

    def _said_ended(self) -> int | None:
        server = self.server
        if self.pid in server._ended:
            return server._ended.pop(self.pid)
        # The server's output has ended, or another server has replaced it: the server itself died (a child
        # cannot kill it: it may not send signals), and its children got SIGKILL with it.
        return -signal.SIGKILL if server._gone or server.proc is not self._of else None

    def poll(self) -> int | None:
        try:
            return self.wait(0)
        except subprocess.TimeoutExpired:
            return None


def claim_slot() -> tuple[int, int]:
    """(uid, lock fd): a grading user id no other grading on this machine holds now."""
    folder = Path(tempfile.gettempdir()) / "attention-lab-slots"
    try:
        folder.mkdir(mode=0o700)
    except FileExistsError:
        pass
    info = os.lstat(folder)
    if not stat.S_ISDIR(info.st_mode) or info.st_uid != os.geteuid() or info.st_mode & 0o077:
        raise GradingError(f"{folder} is not a folder that only this user can write: remove it, then grade again")
    for uid in SLOTS:
        fd = os.open(folder / f"{uid}.lock", os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return uid, fd
        except BlockingIOError:
            os.close(fd)
    raise GradingError(f"all {len(SLOTS)} grading users (uids {SLOTS[0]}-{SLOTS[-1]}) are busy with other gradings")
