"""What the child process does to itself before any student code runs (trusted set-up).

The child starts with the grader's rights: it imports torch and the probes, and only then
confines itself, in an order where each step still has what it needs:

1. ``limit``: hard resource limits (memory, file size, processes, CPU) the student cannot raise;
2. ``namespaces``: fresh network and mount namespaces (with a user namespace when not root);
3. ``world.own_root`` and ``world.landlock``: a root that holds only the child's allow-list, and
   Landlock's rule over the same list (see ``world``); then, when started as root,
   ``drop_privileges`` to the unprivileged grading user;
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
from .world import MS_PRIVATE, MS_REC

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


# ---------------------------------------------------------------- 2, 3. namespaces and user

CLONE_NEWNS, CLONE_NEWUSER, CLONE_NEWNET = 0x00020000, 0x10000000, 0x40000000


def namespaces() -> dict:
    """Move into network and mount namespaces of our own, where the kernel allows: ``{"network":
    bool, "mounts": bool}``. Root can do it directly; another user first needs a user namespace,
    mapped to itself (which must happen while the process has one thread). The network namespace has
    only a loopback, down; the mount namespace is where ``world.own_root`` builds the child's root.
    Containers that forbid namespaces (Docker's default) leave Landlock and the audit hook."""
    if os.getuid() != 0 and not _user_namespace():
        return {"network": False, "mounts": False}
    mounts = libc.unshare(CLONE_NEWNS) == 0 and libc.mount(b"none", b"/", None, MS_REC | MS_PRIVATE, None) == 0
    return {"network": libc.unshare(CLONE_NEWNET) == 0, "mounts": mounts}


def _user_namespace():
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


def can_own_root() -> bool:
    """Can a child made like this process have a root of its own (namespaces allowed)? Tried in a
    forked process, so this one stays as it is."""
    pid = os.fork()
    if pid == 0:
        os._exit(0 if namespaces()["mounts"] else 1)
    return os.waitpid(pid, 0)[1] == 0


def unreachable(paths) -> list:
    """Those of ``paths`` that a user with no rights of its own cannot reach (a Python installed
    under /root, a venv in a private folder): without a root of its own, the grading user cannot
    import from them, and grading must stop rather than half-work."""
    def blocked(path):
        return any(not os.stat(folder).st_mode & 0o001 for folder in [*reversed(path.parents), path])

    return [str(p) for p in map(Path, paths) if os.path.isdir(p) and blocked(p)]


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
SINKS = ("/dev/null", "/dev/zero", "/dev/full")  # writing to these changes nothing: open(os.devnull, "w") is honest


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
            if writing and not under(path, (sandbox,)) and path not in SINKS:
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
