"""A process that has imported torch and the probes once and forks a fresh child per request.

Starting a grading child from nothing means importing torch (over a second here) and warming
up the meta device (another second); forking a process that has done both takes milliseconds.
The server holds nothing a child may not see: it imports exactly what ``child.py`` imports before
it confines itself (no judges, no golden data, no reference), it never runs student code, and it
runs no CPU kernel and never touches CUDA, so every child starts from torch as a fresh import
leaves it. The forked child then confines itself exactly as before (``child.main``).

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
import tempfile
import time
from pathlib import Path

from . import workspace

SLOTS = range(workspace.CHILD_UID, workspace.CHILD_UID + 32)  # 65500-65531: owned by nobody
START_TIMEOUT_S = 60.0
PR_SET_PDEATHSIG = 1


class GradingError(Exception):
    """The grader itself could not run (not the submission's fault): grading must stop loudly."""


def die_with_parent(parent=None):
    """Ask the kernel for SIGKILL when the process (thread) that started us dies; if it already
    has (``parent`` is gone), go now. A change of user clears it: a child asks after dropping root."""
    import ctypes

    parent = parent or os.getppid()
    ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    if os.getppid() != parent:
        os._exit(1)


# ---------------------------------------------------------------- the server process


def serve(meta: bool, threads: int | None):
    """The server's main loop: one JSON request per line on stdin, answered on stdout with
    ``started <pid>`` and, once that child has ended, ``ended <exit code>`` (negative: a signal)."""
    die_with_parent()
    import torch

    # OpenMP's worker threads do not survive a fork, but its bookkeeping does: a child would wait
    # forever for them at its first parallel kernel. With one thread the server starts none, and
    # each child sets its own number (what a fresh process would use, unless told otherwise).
    threads = threads or torch.get_num_threads()
    torch.set_num_threads(1)
    from . import child

    child.preload(meta)
    say = lambda text: os.write(1, f"{text}\n".encode())  # noqa: E731  (unbuffered: nothing for a fork to copy)
    say("ready")
    for line in sys.stdin.buffer:
        request = {**json.loads(line), "server": os.getpid()}
        pid = os.fork()
        if pid == 0:
            torch.set_num_threads(threads)
            _become_child(request)
        say(f"started {pid}")
        _, status = os.waitpid(pid, 0)
        say(f"ended {os.waitstatus_to_exitcode(status)}")


def _become_child(request):
    """In the forked child: a session of its own, its own stdio and environment, then
    ``child.main``. Never returns into the server's loop."""
    code = 1
    try:
        die_with_parent(request["server"])  # at once; child.main asks again after dropping root
        os.setsid()  # its own process group: the grader kills the whole group
        null = os.open(os.devnull, os.O_RDWR)
        err = os.open(request["stderr"], os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o600)
        os.dup2(null, 0)
        os.dup2(null, 1)  # the server's answers go to fd 1: the child must not be able to forge one
        os.dup2(err, 2)
        os.closerange(3, os.sysconf("SC_OPEN_MAX"))
        os.chdir(request["cwd"])
        os.environ.clear()
        os.environ.update(request["env"])
        tempfile.tempdir = None  # HOME and TMPDIR are the workspace's now
        from . import child

        child.main(request["job"])  # ends with os._exit(0)
        code = 0
    except SystemExit as exc:  # what `python -c` would do with it
        if isinstance(exc.code, str):
            print(exc.code, file=sys.stderr)
        code = exc.code if isinstance(exc.code, int) else 1
    except BaseException:
        import traceback

        traceback.print_exc()
    finally:
        sys.stderr.flush()
        os._exit(code)


# ---------------------------------------------------------------- the grader's side


class ForkServer:
    """Start one with ``with ForkServer() as server:``; ``start`` forks a child, one at a time."""

    def __init__(self, meta=True, threads=None):
        self.meta, self.threads = meta, threads
        self.uid = self.gid = None
        self._lock = None
        self.proc = None
        self.mark = f"ATTENTION_LAB_RUN={tokens.token_hex(8)}"
        if workspace.is_root():
            self.uid, self._lock = claim_slot()
            self.gid = self.uid
            self.kill_stragglers(None)  # left by a grading that was killed while it held this slot

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def base_env(self):
        """What every child's environment starts from (``Workspace`` adds its HOME and TMPDIR)."""
        passed = {k: v for k, v in os.environ.items()
                  if k.startswith(("CUDA_", "NVIDIA_", "OMP_", "MKL_", "OPENBLAS_")) or k == "LD_LIBRARY_PATH"}
        name, value = self.mark.split("=")
        # numpy's BLAS starts its threads at import; a fork copies only one, so start none.
        return {"OPENBLAS_NUM_THREADS": "1", **passed, "PATH": "/usr/bin:/bin", "LANG": "C.UTF-8", name: value}

    def _ensure_running(self):
        if self.proc is not None and self.proc.poll() is None:
            return
        from .runner import site_paths

        paths = [str(workspace.KIT_PARENT)] + [p for p in site_paths() if p != str(workspace.KIT_PARENT)]
        boot = (f"import sys; sys.path[:0] = {paths!r}; "
                f"from autograder.forkserver import serve; serve({self.meta!r}, {self.threads!r})")
        self._stderr = tempfile.TemporaryFile()
        self.proc = subprocess.Popen(
            [sys.executable, "-I", "-S", "-c", boot], env=self.base_env(), bufsize=0,
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self._stderr, cwd="/",
        )
        if self._read(START_TIMEOUT_S) != "ready":
            self.close()
            raise GradingError(f"the grader's fork server did not start: {self._last_words()}")

    def _read(self, timeout):
        """The server's next line, None on timeout, "" when it has gone."""
        ready, _, _ = select.select([self.proc.stdout], [], [], timeout)
        if not ready:
            return None
        return self.proc.stdout.readline().decode(errors="replace").strip()

    def _last_words(self):
        self._stderr.seek(0)
        lines = self._stderr.read()[-2000:].decode(errors="replace").strip().splitlines()
        code = self.proc.poll()
        return (lines[-1] if lines else "no error output") + (f" (exit code {code})" if code is not None else "")

    def start(self, job, stderr, cwd, env) -> "Child":
        self._ensure_running()
        request = {"job": str(job), "stderr": str(stderr), "cwd": str(cwd), "env": env}
        try:
            self.proc.stdin.write((json.dumps(request) + "\n").encode())
        except BrokenPipeError:  # it died since the check: start another, once
            self.proc.wait()
            self._ensure_running()
            self.proc.stdin.write((json.dumps(request) + "\n").encode())
        answer = self._read(START_TIMEOUT_S) or ""
        if not answer.startswith("started "):
            self.close()
            raise GradingError(f"the grader's fork server did not fork a child: {self._last_words()}")
        return Child(self, int(answer.split()[1]))

    def kill_stragglers(self, pgid):
        """Kill what a finished child left running: its process group, and every process that
        escaped it (the slot's user id as root; the server's mark otherwise, the server spared)."""
        if pgid is not None:
            workspace.kill_group(pgid)
        spare = {self.proc.pid} if self.proc is not None else set()
        for _ in range(100):  # a fork bomb may race us for a moment; the process limit bounds it
            found = workspace.processes_of(self.uid) if self.uid is not None else workspace.marked(self.mark)
            found = [pid for pid in found if pid not in spare]
            if not found:
                return
            for pid in found:
                try:
                    os.kill(pid, signal.SIGKILL)
                except OSError:
                    pass
            workspace.reap(found)
            time.sleep(0.01)

    def close(self):
        if self.proc is not None:
            if self.proc.poll() is None:
                self.proc.kill()
            self.proc.wait()
            self.proc.stdin.close()
            self.proc.stdout.close()
            self._stderr.close()
            self.proc = None
        if self._lock is not None:
            os.close(self._lock)  # frees the slot
            self._lock = None


class Child:
    """A forked child, as the runner watches it (the part of ``subprocess.Popen`` it uses)."""

    def __init__(self, server, pid):
        self.server, self.pid, self.returncode = server, pid, None

    def wait(self, timeout=None):
        if self.returncode is None:
            answer = self.server._read(timeout)
            if answer is None:
                raise subprocess.TimeoutExpired("grading child", timeout)
            # "" means the server itself died (a child cannot kill it: it may not send signals);
            # its child got SIGKILL with it.
            self.returncode = int(answer.split()[1]) if answer.startswith("ended ") else -signal.SIGKILL
        return self.returncode

    def poll(self):
        try:
            return self.wait(0)
        except subprocess.TimeoutExpired:
            return None


def claim_slot():
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
