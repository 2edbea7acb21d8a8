"""What the sandbox asks of Linux, in one place: libc's prctl, and the process table in /proc.

Grading needs Linux: children are confined with prctl, rlimits and namespaces, and found and
killed through /proc. (On macOS or Windows, grade in a container or WSL.)
"""
from __future__ import annotations

import contextlib
import ctypes
import os
import platform
import signal
import time
from collections.abc import Callable, Iterable

libc = ctypes.CDLL(None, use_errno=True)  # libc, already loaded (find_library would run ldconfig/gcc)
PR_SET_PDEATHSIG, PR_SET_CHILD_SUBREAPER, PR_SET_NO_NEW_PRIVS = 1, 36, 38


def die_with_parent(parent: int | None = None) -> None:
    """Ask the kernel for SIGKILL when the process (thread) that started us dies; if it already
    has (``parent`` is gone), go now. A change of user clears it: a child asks after dropping root."""
    parent = os.getppid() if parent is None else parent
    libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    if os.getppid() != parent:
        os._exit(1)


def no_new_privileges() -> None:
    """Setuid programs (su, sudo) can never lift this process (or its children) again."""
    libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0)


PR_CAPBSET_DROP, CAP_LAST = 24, 63
SYS_CAPSET = {"x86_64": 126, "aarch64": 91, "arm64": 91}.get(platform.machine())


def drop_capabilities() -> bool:
    """Give up every capability, for good: the bounding set, then the effective, permitted and
    inheritable sets. An ordinary user's child holds all of them in its own user namespace (where it
    made its root); without them it can neither remount that root writable nor make another.
    True when the sets are empty afterwards."""
    for cap in range(CAP_LAST + 1):
        libc.prctl(PR_CAPBSET_DROP, cap, 0, 0, 0)  # fails past the kernel's last capability: harmless
    header = (ctypes.c_uint32 * 2)(0x20080522, 0)  # _LINUX_CAPABILITY_VERSION_3, this process
    data = (ctypes.c_uint32 * 6)()  # two {effective, permitted, inheritable}: all zero
    if SYS_CAPSET is None or libc.syscall(SYS_CAPSET, header, data) != 0:
        return False
    with open("/proc/self/status") as f:
        held = {line.split(":")[0]: line.split()[1] for line in f if line.startswith(("CapEff", "CapPrm", "CapBnd"))}
    return set(held.values()) == {"0000000000000000"}


def become_subreaper() -> None:
    """Orphans of our children become ours instead of init's, so they can be found and killed."""
    libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)


def proc_stat(pid: int | str) -> list[bytes]:
    """The fields of ``/proc/<pid>/stat`` after the command name (state first); none where it cannot be
    read (the process is gone): a field asked of that list raises the IndexError its readers catch."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            return f.read().rsplit(b")", 1)[1].split()  # the name may hold spaces and ")"
    except (OSError, IndexError):
        return []


def _stat_all() -> list[tuple[int, int, int]]:
    """(pid, ppid, uid) of every process."""
    found = []
    for name in os.listdir("/proc"):
        fields = proc_stat(name) if name.isdigit() else []
        try:
            found.append((int(name), int(fields[1]), os.stat(f"/proc/{name}").st_uid))
        except (OSError, IndexError, ValueError):
            pass
    return found


def processes_of(uid: int) -> list[int]:
    return _living([pid for pid, _, owner in _stat_all() if owner == uid])


def marked(mark: str) -> list[int]:
    """Processes whose environment carries ``mark`` (readable for processes of our own user)."""
    found = []
    needle = mark.encode() + b"\0"
    for pid, _, _ in _stat_all():
        try:
            with open(f"/proc/{pid}/environ", "rb") as f:
                if needle in f.read():
                    found.append(pid)
        except OSError:
            pass
    return _living(found)


def _living(pids: list[int]) -> list[int]:
    """``pids`` less the zombies, which cannot be killed, only reaped (those that are ours)."""
    zombies = [pid for pid in pids if _is_zombie(pid)]
    reap(zombies)
    return [pid for pid in pids if pid not in zombies]


def _is_zombie(pid: int) -> bool:
    return proc_stat(pid)[:1] == [b"Z"]


def reap(pids: Iterable[int]) -> None:
    for pid in pids:
        try:
            os.waitpid(pid, os.WNOHANG)
        except ChildProcessError:
            pass


def reap_orphan(pid: int, timeout_s: float) -> None:
    """Reap process ``pid`` once it has ended, if it is this process's child (an orphan handed to this
    subreaper); nothing if it is not. Past ``timeout_s`` it is ended (SIGKILL)."""
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            if os.waitpid(pid, os.WNOHANG)[0]:
                return
        except ChildProcessError:  # not ours: another process reaps it
            return
        if time.monotonic() > deadline:
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)
            with contextlib.suppress(ChildProcessError):
                os.waitpid(pid, 0)
            return
        time.sleep(0.001)


# unshare's flags for the namespaces the sandbox makes (the syscall filter refuses all of them later).
CLONE_NEWNS, CLONE_NEWIPC, CLONE_NEWUSER, CLONE_NEWPID, CLONE_NEWNET = (0x00020000, 0x08000000, 0x10000000, 0x20000000,
                                                                     0x40000000)


def own_user_namespace() -> bool:
    """Move into a user namespace of our own, this user mapped to itself (it must have one thread):
    there it holds the capabilities an ordinary user lacks, over namespaces it makes next (a mount
    namespace, where it may mount a tmpfs), and nothing outside. True when it did."""
    uid, gid = os.getuid(), os.getgid()
    if libc.unshare(CLONE_NEWUSER) != 0:
        return False
    try:
        for name, text in (("setgroups", "deny"), ("uid_map", f"{uid} {uid} 1"), ("gid_map", f"{gid} {gid} 1")):
            with open(f"/proc/self/{name}", "w") as f:
                f.write(text)
    except OSError:
        return False
    return True


def kill_until_gone(find: Callable[[], list[int]], rounds: int, pause: float) -> None:
    """SIGKILL the processes ``find()`` lists until it lists none (a fork bomb races for a moment: a
    process or task limit bounds it), at most ``rounds`` times, reaping those that are ours."""
    for _ in range(rounds):
        found = find()
        if not found:
            return
        for pid in found:
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass
        reap(found)
        time.sleep(pause)


def kill_group(pgid: int) -> None:
    try:
        os.killpg(pgid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
