"""The fork server's own loop, in its own process: it has imported torch and the probes once, and
forks a fresh grading child per request (``forkserver.ForkServer`` is the grader's end of it).

It holds nothing a child may not see: it imports exactly what ``child.py`` imports before it
confines itself (no judges, no golden data, no reference), it never runs student code, and it runs
no CPU kernel and never touches CUDA, so every child starts from torch as a fresh import leaves it,
but for the compiler's wrappers told how to call what they wrap (``child.settle_dynamo_wrappers``).
"""
from __future__ import annotations

import contextlib
import gc
import json
import os
import select
import signal
import sys
import tempfile
from typing import Any, NoReturn

from .linux import CLONE_NEWPID, die_with_parent, libc, own_user_namespace
from .world import MNT_DETACH, NoRoot, own_mount_namespace, tmpfs


def serve(meta: bool, threads: int | None, probes: str, private: bool = False, pids: bool = False) -> None:
    """The server's main loop: one JSON request per line on stdin, answered on stdout with
    ``started <pid>`` (``started <pid> tmpfs`` when the child's output folder is a tmpfs of the
    server's) and, once that child has ended, ``ended <exit code> <pid>`` (negative: a signal).
    Where the ready line says ``concurrent`` (a kernel with pidfds), the next request may come while
    children run: each one's end is said as it comes.

    ``private``: the grader cannot mount (an ordinary user), so the server makes a user and mount
    namespace of its own, where it can, and mounts each child's output folder as a bounded tmpfs
    there (the request's ``tmpfs``: bytes, files): what a child writes can fill only that. The grader
    reads it through ``/proc/<server>/root`` while the child lives (it asks, and reads each answer, before
    the child ends); it is unmounted when the child has ended, before that is said, and all of them go
    with the server's namespace when it ends, however it ends.

    ``pids``: fork the children into a PID namespace of their own (``_pid_namespace``); the ready
    line then names its init's pid, which the grader must spare."""
    die_with_parent()
    # First: a user namespace needs a process of one thread (torch starts others).
    owned = private and own_user_namespace()
    mounts = owned and own_mount_namespace()
    import torch
    # OpenMP's worker threads do not survive a fork, but its bookkeeping does: a child would wait
    # forever for them at its first parallel kernel. With one thread the server starts none, and
    # each child sets its own number: one unless the instructor asks for more. The probes' tensors
    # are tiny, so more threads gain nothing on a quiet machine, and on a busy one they wait for
    # each other and for cores that other gradings need (a grading took 15-37 s instead of 8).
    threads = threads or 1
    torch.set_num_threads(1)
    from . import child

    child.preload(meta, probes)
    # What is loaded now lives as long as the server and every child: out of the collector's reach, a
    # full collection in a child walks the submission's objects, not torch's (0.07 s instead of 0.01),
    # and no collection writes to the pages a child shares with the server.
    gc.freeze()
    def say(text: str) -> None:
        os.write(1, f"{text}\n".encode())  # unbuffered: nothing for a fork to copy

    # Last, once torch is warm: from here on the kernel refuses this process new threads.
    init = _pid_namespace() if pids and (owned or os.getuid() == 0) else None
    concurrent = _pidfds()
    say(" ".join(["ready"] + ["tmpfs"] * bool(mounts) + [f"init {init}"] * (init is not None)
                 + ["concurrent"] * concurrent))
    mounted: dict[int, str] = {}  # pid -> the output folder mounted for that child
    running: dict[int, int] = {}  # pidfd -> pid, of each child that has not ended

    def ended(pid: int) -> None:
        """Reap child ``pid``, unmount its output folder, and say it ended."""
        code = os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1])
        if pid in mounted:
            libc.umount2(os.fsencode(mounted.pop(pid)), MNT_DETACH)
        say(f"ended {code} {pid}")

    pending = b""  # of stdin: read with os.read, never a buffered reader, whose buffer select cannot see
    while True:
        ready = select.select([0, *running], [], [])[0]
        for fd in ready:
            if fd != 0:  # that child has ended: reaped now, said with its pid
                pid = running.pop(fd)
                os.close(fd)
                ended(pid)
        if 0 not in ready:
            continue
        chunk = os.read(0, 1 << 16)
        if not chunk:
            return  # the grader has gone: so do the children (die_with_parent)
        pending += chunk
        while b"\n" in pending:
            line, pending = pending.split(b"\n", 1)
            # What the child's getppid() says while the server lives: 0 from inside a PID namespace.
            request = {**json.loads(line), "server": 0 if init is not None else os.getpid()}
            own_tmpfs = bool(mounts and request.get("tmpfs") and _output_tmpfs(request))
            if init is not None and os.waitpid(init, os.WNOHANG)[0]:  # its namespace is gone: no child can be forked
                sys.exit("the PID namespace's init has ended")  # the grader starts another server
            grouped, has_group = os.pipe()
            pid = os.fork()
            if pid == 0:
                os.close(grouped)
                torch.set_num_threads(threads)
                _become_child(request, has_group)
            os.close(has_group)
            # "started" names a process group: the grader may kill the child's group from the moment it
            # hears it, and a group killed before the child had made it would be none (ESRCH): the child
            # would live on and stop itself after its set-up, and the grader wait for its end for ever.
            os.read(grouped, 1)  # b"" where the child died before: then its end is said as any other
            os.close(grouped)
            if own_tmpfs:
                mounted[pid] = request["cwd"]
            say(f"started {pid}" + (" tmpfs" if own_tmpfs else ""))
            if concurrent:
                running[os.pidfd_open(pid)] = pid  # the child has closed it (and every fd but its stdio)
            else:  # one child at a time (no pidfds: Linux before 5.3)
                ended(pid)


def _pidfds() -> bool:
    """Can this kernel watch a child through a pidfd (Linux 5.3 on)? Then the server runs several
    children at once, and says which one ended; else one at a time."""
    try:
        os.close(os.pidfd_open(os.getpid()))
    except (AttributeError, OSError):
        return False
    return True


PR_SET_DUMPABLE = 4


def _pid_namespace() -> int | None:
    """Fork every later child into a PID namespace of its own: there the grader, the server and every
    other grading's processes have no pid, so a child cannot name them, let alone signal, trace or
    limit them, whatever the syscall filter lets through; and what a child leaves running dies with
    the namespace. One namespace serves all the server's children (one at a time, or two at once where the
    grader runs a task apart: then each child's control group ends what it started, and the grader sweeps
    after both), and its init is a process that only reaps, forked now:
    ``unshare(CLONE_NEWPID)`` moves only the processes started after it, and the first one is the
    namespace's init, whose end would end it. Returns the init's pid, None where the kernel refuses.

    Made here, not in the child: a process that has made one may start no thread (the kernel refuses
    it EINVAL), and a child needs threads (torch's, CUDA's); the server starts none from here on."""
    if libc.unshare(CLONE_NEWPID) != 0:
        return None
    alive, held = os.pipe()  # the server holds ``held`` (its children close it): EOF when the server is gone
    settled, said = os.pipe()  # the init says here that it catches no signal: only then may a child start
    pid = os.fork()
    if pid == 0:  # the init: holds the namespace open, reaps whatever is left to it, dies with the server
        try:
            # The kernel drops a signal sent to a namespace's init from inside only where its action is
            # the default: Python's SIGINT handler would let a child end it (by F_SETSIG as well as by
            # kill), and with it the namespace and every later grading of this server.
            for sig in signal.valid_signals() - {signal.SIGKILL, signal.SIGSTOP}:
                with contextlib.suppress(OSError):  # those libc keeps for itself
                    signal.signal(sig, signal.SIG_IGN if sig == signal.SIGCHLD else signal.SIG_DFL)  # the kernel reaps
            die_with_parent(0)  # its parent, outside the namespace, has no pid in it
            libc.prctl(PR_SET_DUMPABLE, 0, 0, 0, 0)  # no child of the same user may trace it (and end the namespace)
            os.write(said, b"1")
            os.closerange(0, alive)
            os.closerange(alive + 1, os.sysconf("SC_OPEN_MAX"))
            while os.read(alive, 1):  # also ends it if the server died before die_with_parent
                pass
        finally:
            os._exit(0)
    os.close(alive)
    os.close(said)
    if os.read(settled, 1) != b"1":
        sys.exit("the PID namespace's init did not start")
    os.close(settled)
    return pid


def _output_tmpfs(request: dict[str, Any]) -> bool:
    """Mount the child's output folder (``cwd``) as a tmpfs of ``tmpfs`` = [bytes, files], 0700 and
    this user's: True when it was."""
    size, inodes = request["tmpfs"]
    try:
        tmpfs(request["cwd"], size, inodes, 0o700)
    except NoRoot:
        return False
    return True


def _become_child(request: dict[str, Any], has_group: int) -> NoReturn:
    """In the forked child: a session of its own (said on ``has_group``), its own stdio and environment,
    then ``child.main``. Never returns into the server's loop."""
    code = 1
    try:
        die_with_parent(request["server"])  # at once; child.main asks again after dropping root
        os.setsid()  # its own process group: the grader kills the whole group
        os.write(has_group, b"1")
        os.close(has_group)
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
