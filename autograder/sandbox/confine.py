"""What the child process does to itself before any student code runs (trusted set-up).

The child starts with the grader's rights: it imports torch and the probes, and only then
confines itself, in an order where each step still has what it needs:

1. ``limit``: hard resource limits (memory, file size, processes, CPU) the student cannot raise;
2. ``cut_network``: a fresh network namespace with no interfaces, when the kernel allows one;
3. ``expose``, ``hide`` and ``drop_privileges``: when started as root, make sure Python's own
   folders stay readable, lay an empty folder over the kit's files (hidden checks, golden data,
   the reference) in the child's own view of the file system, then become the unprivileged
   grading user;
4. ``arm``: an audit hook (which Python code cannot remove) that refuses sockets, new processes,
   signals, ctypes, tracing, memory scans, writes outside the sandbox and reads of the grader;
5. ``public.watch.Watch`` (used by ``child``): a snapshot of torch, builtins and the probes,
   compared after every task, so a submission that patches ``torch.allclose`` (or a probe) is
   caught and undone.

``HandWritten`` is the torch function mode that refuses library attention in stages whose point
is to write attention by hand. Like the probes, this module imports nothing from the grading side.
"""
from __future__ import annotations

import os
import resource
import sys
from pathlib import Path

import torch
from torch.overrides import TorchFunctionMode

from .linux import libc, no_new_privileges

# ---------------------------------------------------------------- 1. limits


def limit(memory_bytes, file_bytes, cpu_seconds, extra_processes, address_space=True):
    """Hard limits (soft == hard): the submission can lower them, never raise them."""

    def hard(which, value):
        resource.setrlimit(which, (value, value))

    hard(resource.RLIMIT_CORE, 0)
    hard(resource.RLIMIT_FSIZE, file_bytes)  # a flood of output ends in SIGXFSZ, not a full disk
    hard(resource.RLIMIT_CPU, int(cpu_seconds))  # backstop: the parent's watchdog acts first
    if address_space:  # CUDA reserves terabytes of address space: there the parent watches RSS
        hard(resource.RLIMIT_AS, _vm_size() + memory_bytes)
    # Counted per user, threads included; enforced only once the process is not root.
    hard(resource.RLIMIT_NPROC, _tasks_of(os.getuid()) + extra_processes)


def _vm_size():
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmSize:"):
                return int(line.split()[1]) * 1024
    return 0


def _tasks_of(uid):
    """Threads that belong to ``uid`` now (what RLIMIT_NPROC counts)."""
    count = 0
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            if os.stat(f"/proc/{pid}").st_uid == uid:
                count += len(os.listdir(f"/proc/{pid}/task"))
        except OSError:
            pass
    return count


# ---------------------------------------------------------------- 2, 3. network and user

CLONE_NEWUSER, CLONE_NEWNET = 0x10000000, 0x40000000


def cut_network():
    """Move into a network namespace of our own (only a loopback, down). True if it worked.

    Root can do it directly; another user first needs a user namespace, mapped to itself.
    Containers that forbid namespaces (Docker's default) leave the audit hook as the defence.
    """
    if os.getuid() == 0:
        return libc.unshare(CLONE_NEWNET) == 0
    uid, gid = os.getuid(), os.getgid()
    if libc.unshare(CLONE_NEWUSER | CLONE_NEWNET) != 0:
        return False
    try:
        for name, text in (("setgroups", "deny"), ("uid_map", f"{uid} {uid} 1"), ("gid_map", f"{gid} {gid} 1")):
            with open(f"/proc/self/{name}", "w") as f:
                f.write(text)
    except OSError:
        return False
    return True


CLONE_NEWNS, MS_RDONLY, MS_BIND, MS_REC, MS_PRIVATE, MNT_DETACH = 0x00020000, 1, 4096, 16384, 1 << 18, 2


def _blocked(path):
    """The first folder on the way to ``path`` that a user with no rights of its own cannot enter."""
    for folder in [*reversed(path.parents), path]:
        if not os.stat(folder).st_mode & 0o001:
            return folder
    return None


_private_mounts = False  # has this process its own mount namespace yet?


def own_mount_namespace() -> bool:
    """Give this process a mount namespace of its own, whose mounts no other process sees (once);
    False when the kernel or the container refuses (no CAP_SYS_ADMIN)."""
    global _private_mounts
    if not _private_mounts:
        _private_mounts = (libc.unshare(CLONE_NEWNS) == 0
                           and libc.mount(b"none", b"/", None, MS_REC | MS_PRIVATE, None) == 0)
    return _private_mounts


def can_hide() -> bool:
    """Can a child made like this process hide folders in a mount namespace of its own? Tried in
    a forked process, so this one's view of the file system stays as it is."""
    pid = os.fork()
    if pid == 0:
        os._exit(0 if own_mount_namespace() else 1)
    return os.waitpid(pid, 0)[1] == 0


def hide(paths) -> list:
    """Lay an empty, read-only folder that nobody may enter over each of ``paths`` (the kit's
    package, the reference), in this process's own mount namespace: the files stay as they are on
    disk, for the instructor, and the child and its descendants see nothing there. Returns the
    paths it could not hide."""
    paths = [Path(p) for p in paths if os.path.isdir(p)]  # hidden already when gone from this view
    if not paths or not own_mount_namespace():
        return [str(p) for p in paths]
    return [str(p) for p in paths if libc.mount(b"tmpfs", bytes(p), b"tmpfs", MS_RDONLY, b"mode=0000,size=4k") != 0]


def expose(paths, stash):
    """Let an unprivileged user reach ``paths`` (Python's library, site-packages) when a folder on
    the way is closed to others (a Python installed under /root, a venv in a private folder).

    In a mount namespace of its own, the child lays an empty tmpfs (mode 0711) over the closed
    folder and binds back into it only what leads to ``paths``; its other contents (the kit's
    checks and reference, when they live beside the venv) disappear. Returns the paths that stay
    out of reach (none when it worked); the caller then refuses to grade rather than half-work.
    """
    paths = [Path(p) for p in paths if os.path.isdir(p)]
    if not any(_blocked(p) for p in paths):
        return []
    Path(stash).mkdir()
    if not own_mount_namespace():
        return [str(p) for p in paths if _blocked(p)]
    for round_no in range(8):  # one closed folder per round; a folder may hide another further down
        closed = sorted({_blocked(p) for p in paths} - {None}, key=lambda f: len(f.parts))
        if not closed:
            return []
        folder = closed[0]
        keep = sorted({folder / p.relative_to(folder).parts[0] for p in paths
                       if p != folder and p.is_relative_to(folder)})
        held = []
        for i, inner in enumerate(keep):
            spot = Path(stash) / f"keep{round_no}.{i}"
            spot.mkdir()
            if libc.mount(bytes(inner), bytes(spot), None, MS_BIND | MS_REC, None) != 0:
                return [str(inner)]
            held.append((inner, spot))
        if libc.mount(b"tmpfs", bytes(folder), b"tmpfs", 0, b"mode=0711,size=64k") != 0:
            return [str(folder)]
        for inner, spot in held:
            (folder / inner.name).mkdir(mode=0o755)
            libc.mount(bytes(spot), bytes(folder / inner.name), None, MS_BIND | MS_REC, None)
            libc.umount2(bytes(spot), MNT_DETACH)
    return [str(p) for p in paths if _blocked(p)]


def drop_privileges(uid, gid):
    """Become ``uid``:``gid`` for good, with no supplementary groups and no way back."""
    no_new_privileges()
    os.setgroups([])
    os.setgid(gid)
    os.setuid(uid)
    try:
        os.setuid(0)
    except PermissionError:
        return
    raise RuntimeError("could not drop root privileges")


# ---------------------------------------------------------------- 4. the audit hook

class Refused(PermissionError):
    """Raised inside the submission when it does something grading does not allow."""


# event -> what the student tried, in their terms
FORBIDDEN = {
    **dict.fromkeys(("socket.__new__", "socket.connect", "socket.bind", "socket.getaddrinfo",
                     "socket.gethostbyname", "socket.sendto", "urllib.Request"), "open a network connection"),
    **dict.fromkeys(("subprocess.Popen", "os.system", "os.exec", "os.posix_spawn", "os.spawn",
                     "os.fork", "os.forkpty", "pty.spawn"), "start another process"),
    **dict.fromkeys(("os.kill", "os.killpg", "signal.pthread_kill"), "send a signal to a process"),
    **dict.fromkeys(("ctypes.dlopen", "ctypes.dlsym", "ctypes.call_function", "ctypes.cdata",
                     "ctypes.addressof"), "call native code through ctypes"),
    **dict.fromkeys(("gc.get_objects", "gc.get_referrers", "gc.get_referents"), "scan the grader's memory (gc)"),
    **dict.fromkeys(("sys.settrace", "sys.setprofile", "threading.settrace", "threading.setprofile"),
                    "trace the grader's code"),
}
WRITES = ("os.rename", "os.remove", "os.rmdir", "os.mkdir", "os.chmod", "os.chown", "os.link",
          "os.symlink", "os.truncate", "os.utime", "shutil.rmtree", "shutil.copyfile", "shutil.move")
_WRITE_FLAGS = os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_TRUNC | os.O_APPEND


def arm(sandbox, secrets, grader_files, record):
    """Install the audit hook. It cannot be removed, and nothing outside keeps a reference to it.

    ``sandbox``: the only folder the submission may write in. ``secrets``: folders it may not
    read or import from. ``grader_files``: source files whose frames ``sys._getframe`` may not
    hand out. ``record(what)`` is told of every refusal, also of those the student catches.
    """
    sandbox = os.path.realpath(sandbox)
    secrets = tuple(os.path.realpath(s) for s in secrets)
    under = lambda path, roots: any(path == r or path.startswith(r + os.sep) for r in roots)  # noqa: E731

    def real(path):
        return os.path.realpath(os.fsdecode(path)) if isinstance(path, (str, bytes, os.PathLike)) else None

    def refuse(what, quietly=False):
        # Reads of the grader are refused quietly: torch's warnings and tracebacks look up source
        # lines of the probes too, and failing to find them is harmless.
        if not quietly:
            record(what)
        raise Refused(f"grading does not allow code to {what}")

    def hook(event, args):
        what = FORBIDDEN.get(event)
        if what is not None:
            refuse(what)
        elif event == "open":
            path, mode, flags = args
            path = real(path)
            if path is None:
                return
            if under(path, secrets):
                refuse(f"read the grader's files ({path})", quietly=True)
            writing = any(c in mode for c in "wax+") if isinstance(mode, str) else bool((flags or 0) & _WRITE_FLAGS)
            if writing and not under(path, (sandbox,)):
                refuse(f"write outside its sandbox ({path})")
        elif event in WRITES:
            for path in args[:2]:
                path = real(path)
                if path is not None and not under(path, (sandbox,)):
                    refuse(f"change files outside its sandbox ({path})")
        elif event in ("os.listdir", "os.scandir"):
            path = real(args[0]) if args and args[0] is not None else None
            if path is not None and under(path, secrets):
                refuse(f"list the grader's files ({path})", quietly=True)
        elif event == "import":
            top = args[0].split(".")[0]
            if top == "_posixsubprocess":  # starts processes without an audit event of its own
                refuse("start another process")
            if top in ("autograder", "solutions") and args[0] not in sys.modules:
                refuse(f"import the grader ({args[0]})", quietly=True)
        elif event == "sys._getframe":
            frame = args[0]
            if frame is not None and frame.f_code.co_filename in grader_files:
                refuse("read the grader's frames", quietly=True)

    sys.addaudithook(hook)
    # The process spawner that has no audit event of its own: out of reach by name.
    sys.modules.pop("_posixsubprocess", None)
    if "subprocess" in sys.modules:
        sys.modules["subprocess"]._posixsubprocess = None


# ---------------------------------------------------------------- library attention

LIBRARY_ATTENTION = {
    torch.nn.functional.scaled_dot_product_attention: "F.scaled_dot_product_attention",
    torch.nn.functional.multi_head_attention_forward: "nn.MultiheadAttention",
    torch._native_multi_head_attention: "nn.MultiheadAttention",
}


class HandWritten(TorchFunctionMode):
    """Refuse (and remember) calls to library attention while a hand-written stage is probed."""

    def __init__(self):
        super().__init__()
        self.used = None

    def __torch_function__(self, func, types, args=(), kwargs=None):
        name = LIBRARY_ATTENTION.get(func)
        if name is not None:
            self.used = self.used or name
            raise Refused(f"{name} is not allowed here: this stage asks you to write attention by hand")
        return func(*args, **(kwargs or {}))
