"""What the child process does to itself before any student code runs (trusted set-up).

The child starts with the grader's rights: it imports torch and the probes, and only then
confines itself, in an order where each step still has what it needs:

1. ``limit``: hard resource limits (memory, file size, processes, CPU) the student cannot raise;
2. ``namespaces``: fresh network, mount and IPC namespaces (with a user namespace when not root),
   and ``new_session_keyring``: an empty session keyring in place of the grader's;
3. ``world.own_root`` and ``world.landlock``: a root that holds only the child's allow-list, and
   Landlock's rule over the same list (see ``world``); then, when started as root,
   ``drop_privileges`` to the unprivileged grading user; then ``syscalls.install``, a seccomp filter
   that refuses calls on other processes, namespaces, keyrings, IPC, sockets but AF_UNIX and memfds;
4. ``arm``: an audit hook (which Python code cannot remove) that refuses sockets, new processes,
   signals, ctypes, tracing, memory scans, writes outside the sandbox and reads of the grader;
5. ``public.watch.Watch`` (used by ``child``): a snapshot of torch, builtins and the probes,
   compared after every task, so a submission that patches ``torch.allclose`` (or a probe) is
   caught and undone.

``HandWritten`` is the torch function mode (with a dispatch mode under it) that refuses library
attention in stages whose point is to write attention by hand. Like the probes, this module imports
nothing from the grading side.
"""
from __future__ import annotations

import os
import platform
import resource
import sys
from pathlib import Path
from typing import TYPE_CHECKING

import torch
from torch.overrides import TorchFunctionMode
from torch.utils._python_dispatch import TorchDispatchMode

from .linux import CLONE_NEWIPC, CLONE_NEWNET, libc, no_new_privileges, own_user_namespace
from .world import own_mount_namespace, own_proc

if TYPE_CHECKING:
    from collections.abc import Callable, Container, Iterable, Mapping, Sequence
    from types import TracebackType
    from typing import Any, NoReturn

# ---------------------------------------------------------------- 1. limits


def limit(memory_bytes: int, file_bytes: int, cpu_seconds: float, extra_processes: int,
          address_space: bool = True) -> None:
    """Hard limits (soft == hard): the submission can lower them, never raise them."""

    def hard(which: int, value: int) -> None:
        resource.setrlimit(which, (value, value))

    hard(resource.RLIMIT_CORE, 0)
    hard(resource.RLIMIT_FSIZE, file_bytes)  # a flood of output ends in SIGXFSZ, not a full disk
    hard(resource.RLIMIT_CPU, int(cpu_seconds))  # backstop: the parent's watchdog acts first
    if address_space:  # CUDA reserves terabytes of address space: there the parent watches RSS
        hard(resource.RLIMIT_AS, _vm_size() + memory_bytes)
    # Counted per user, threads included; enforced only once the process is not root.
    hard(resource.RLIMIT_NPROC, _tasks_of(os.getuid()) + extra_processes)


def _vm_size() -> int:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmSize:"):
                return int(line.split()[1]) * 1024
    return 0


def _tasks_of(uid: int) -> int:
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

def namespaces() -> dict[str, Any]:  # all bools; Any: child.main merges them into its mixed ``layers``
    """Move into network, mount and IPC namespaces of our own, where the kernel allows: ``{"network":
    bool, "mounts": bool, "ipc": bool, "pids": bool}``; the PID namespace is the fork server's to make
    (``server._pid_namespace``), and this says whether we are in one. Root can do it directly;
    another user first needs a user namespace, mapped to itself (which must happen while the process has
    one thread). The network namespace has only a loopback, down; the mount namespace is where
    ``world.own_root`` builds the child's root, over a /proc of its PID namespace (``world.own_proc``);
    the IPC namespace holds no SysV object or POSIX message queue of anyone else's, and what the child
    makes there goes with it. Containers that forbid
    namespaces (Docker's default) leave Landlock, the syscall filter and the audit hook."""
    pids, root = in_own_pid_namespace(), os.getuid() == 0
    if not root:
        # The fork server's user namespace owns the PID namespace, and this child still holds the
        # server's capabilities there: the one place where the kernel lets it mount that namespace's
        # /proc. So first a mount namespace there, with that /proc; the child's own user namespace,
        # next, copies it, and grants nothing over the server's.
        if pids and own_mount_namespace():
            own_proc()
        if not own_user_namespace():
            return {"network": False, "mounts": False, "ipc": False, "pids": pids}
    mounts = own_mount_namespace()
    if root and mounts and pids:  # root mounts it in its own mount namespace
        own_proc()
    return {"network": libc.unshare(CLONE_NEWNET) == 0, "mounts": mounts, "ipc": libc.unshare(CLONE_NEWIPC) == 0,
            "pids": pids}


def in_own_pid_namespace() -> bool:
    """Whether this process is in a PID namespace below the one /proc shows (its NSpid has more than
    one pid): the fork server's, where the grader has no pid."""
    try:
        with open("/proc/self/status") as f:
            return any(line.startswith("NSpid:") and len(line.split()) > 2 for line in f)
    except OSError:
        return False


def can_own_root() -> bool:
    """Can a child made like this process have a root of its own (namespaces allowed)? Tried in a
    forked process, so this one stays as it is."""
    pid = os.fork()
    if pid == 0:
        code = 1
        try:
            code = 0 if namespaces()["mounts"] else 1
        finally:  # whatever happens, this copy of the grader never goes on grading
            os._exit(code)
    return os.waitpid(pid, 0)[1] == 0


def unreachable(paths: Iterable[str]) -> list[str]:
    """Those of ``paths`` that a user with no rights of its own cannot reach (a Python installed
    under /root, a venv in a private folder): without a root of its own, the grading user cannot
    import from them, and grading must stop rather than half-work."""
    def blocked(path: Path) -> bool:
        return any(not os.stat(folder).st_mode & 0o001 for folder in [*reversed(path.parents), path])

    return [str(p) for p in map(Path, paths) if os.path.isdir(p) and blocked(p)]


SYS_KEYCTL = {"x86_64": 250, "aarch64": 219, "arm64": 219}.get(platform.machine())
KEYCTL_JOIN_SESSION_KEYRING = 1


def new_session_keyring() -> bool:
    """Leave the session keyring the child was forked with (the grader's: whatever keys its login or a
    tool put there) for a new, empty one of its own, which goes when it ends. The syscall filter then
    refuses every keyring call. True when it joined one."""
    if SYS_KEYCTL is None:
        return False
    return bool(libc.syscall(SYS_KEYCTL, KEYCTL_JOIN_SESSION_KEYRING, None) > 0)  # the new keyring's serial


def drop_privileges(uid: int, gid: int | None) -> None:
    """Become ``uid``:``gid`` for good, with no supplementary groups and no way back."""
    no_new_privileges()
    os.setgroups([])
    assert gid is not None  # a Job's gid is set whenever its uid is
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


def arm(sandbox: str, secrets: Iterable[str], grader_files: Container[str | None],
        record: Callable[[str], object]) -> None:
    """Install the audit hook. It cannot be removed, and nothing outside keeps a reference to it.

    ``sandbox``: the only folder the submission may write in. ``secrets``: folders it may not
    read or import from. ``grader_files``: source files whose frames ``sys._getframe`` may not
    hand out. ``record(what)`` is told of every refusal, also of those the student catches.
    """
    sandbox = os.path.realpath(sandbox)
    secrets = tuple(os.path.realpath(s) for s in secrets)
    under: Callable[[str, Iterable[str]], bool] = (  # noqa: E731
        lambda path, roots: any(path == r or path.startswith(r + os.sep) for r in roots))

    def real(path: object) -> str | None:
        return os.path.realpath(os.fsdecode(path)) if isinstance(path, (str, bytes, os.PathLike)) else None

    def refuse(what: str, quietly: bool = False) -> NoReturn:
        # Reads of the grader are refused quietly: torch's warnings and tracebacks look up source
        # lines of the probes too, and failing to find them is harmless.
        if not quietly:
            record(what)
        raise Refused(f"grading does not allow code to {what}")

    def hook(event: str, args: tuple[Any, ...]) -> None:
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
        sys.modules["subprocess"]._posixsubprocess = None  # type: ignore[attr-defined]  # private: not in its stubs


# ---------------------------------------------------------------- library attention

# The Python functions of library attention, as a student knows them.
LIBRARY_ATTENTION: dict[Callable[..., Any], str] = {
    torch.nn.functional.scaled_dot_product_attention: "F.scaled_dot_product_attention",
    torch.nn.functional.multi_head_attention_forward: "nn.MultiheadAttention",
    torch._native_multi_head_attention: "nn.MultiheadAttention",
}

# aten's operators of library attention, by a part of their name -> the function a student knows.
# Found by name in the dispatcher's list, so that a kernel a new torch adds is covered too.
KERNEL_PARTS = {
    "scaled_dot_": "F.scaled_dot_product_attention",  # the op itself, its math path, and _triton_scaled_dot_attention
    "flash_attention": "F.scaled_dot_product_attention",  # its fused kernels: the CPU's, CUDA's, ...
    "efficient_attention": "F.scaled_dot_product_attention",
    "cudnn_attention": "F.scaled_dot_product_attention",
    "_fused_sdp_choice": "F.scaled_dot_product_attention",  # picks the fused kernel: only attention asks
    # The softmax of the math path (taken with dropout), which decomposes into ordinary ops that a
    # hand-written layer uses too: only attention uses this one.
    "_safe_softmax": "F.scaled_dot_product_attention",
    "multi_head_attention": "nn.MultiheadAttention",  # _native_multi_head_attention, _triton_multi_head_attention
    "transformer_encoder_layer_fwd": "nn.TransformerEncoderLayer",  # its fused fast path
}


def _kernels() -> dict[str, str]:
    """aten op name (``_scaled_dot_product_flash_attention_for_cpu``) -> the function a student knows."""
    found: dict[str, str] = {}
    for qualified in torch._C._dispatch_get_all_op_names():
        namespace, _, name = qualified.partition("::")
        name = name.split(".")[0]
        part = next((p for p in KERNEL_PARTS if p in name), None) if namespace == "aten" else None
        if part is not None:
            found[name] = KERNEL_PARTS[part]
    return found


def _bindings(kernels: Mapping[str, str]) -> dict[Callable[..., Any], str]:
    """Their Python bindings (``torch._scaled_dot_product_flash_attention_for_cpu`` and the like),
    which reach the function mode as themselves -> what they are, and the name called."""
    found: dict[Callable[..., Any], str] = {}
    for prefix, space in (("torch", torch), ("torch._C._nn", torch._C._nn)):
        for name, what in kernels.items():
            fn = getattr(space, name, None)
            if callable(fn):
                found.setdefault(fn, f"{what} ({prefix}.{name})")
    return found


KERNELS = _kernels()
LIBRARY_ATTENTION = {**_bindings(KERNELS), **LIBRARY_ATTENTION}  # F.scaled_dot_product_attention is torch._C._nn's
# By the op's qualified name, which both modes are handed (a name, unlike a Python object that
# torch.ops makes on first use, cannot be swapped for another one).
_QUALIFIED = {f"aten::{name}": what for name, what in KERNELS.items()}
TOOK_OFF = "code that took the grader's check for library attention off torch's stack of modes"


class HandWritten(TorchFunctionMode):
    """Refuse (and remember) calls to library attention while a hand-written stage is probed.

    Two layers, entered and left together. This function mode sees the Python call
    (``F.scaled_dot_product_attention``, ``torch.ops.aten.scaled_dot_product_attention``) and says so
    in the student's words; ``_Kernels``, a dispatch mode, sees the fused kernel the call reaches,
    however it was reached (with torch functions disabled, from TorchScript). Both are torch modes of
    this thread: code that takes them off the stack, or runs in a thread of its own, goes round them;
    the first is noticed on the way out, and the instructor's review of the source names both.
    """

    def __init__(self) -> None:
        super().__init__()
        self.used: str | None = None
        self._kernels = _Kernels(self)

    def __enter__(self) -> HandWritten:
        super().__enter__()  # type: ignore[no-untyped-call]  # untyped in torch
        self._kernels.__enter__()  # type: ignore[no-untyped-call]  # untyped in torch
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc_value: BaseException | None,
                 traceback: TracebackType | None) -> None:
        dispatch, function = torch._C._len_torch_dispatch_stack(), torch._C._len_torch_function_stack()
        if not (dispatch and torch._C._get_dispatch_stack_at(dispatch - 1) is self._kernels
                and function and torch._C._get_function_stack_at(function - 1) is self):
            self.use(TOOK_OFF, refuse=False)  # a mode of its own left above ours is undone by Watch
        if dispatch:
            self._kernels.__exit__(exc_type, exc_value, traceback)  # type: ignore[no-untyped-call]  # untyped in torch
        if function:
            super().__exit__(exc_type, exc_value, traceback)  # type: ignore[no-untyped-call]  # untyped in torch

    def use(self, name: str, refuse: bool = True) -> None:
        self.used = self.used or name
        if refuse:
            raise Refused(f"{name} is not allowed here: this stage asks you to write attention by hand")

    def __torch_function__(self, func: Callable[..., Any], types: Sequence[type], args: Sequence[object] = (),
                           kwargs: Mapping[str, object] | None = None) -> Any:
        name = LIBRARY_ATTENTION.get(func)
        if name is None and isinstance(func, (torch._ops.OpOverload, torch._ops.OpOverloadPacket)):
            op = getattr(func, "_qualified_op_name", None) or func._name  # torch.ops.aten.<op>[.<overload>]
            if op in _QUALIFIED:
                name = f"{_QUALIFIED[op]} (torch.ops.{op.replace('::', '.')})"
        if name is not None:
            self.use(name)
        return func(*args, **(kwargs or {}))


class _Kernels(TorchDispatchMode):  # type: ignore[no-untyped-call]  # untyped in torch
    """``HandWritten``'s dispatch mode: every aten op passes through here, so it does one set lookup
    and nothing else for the ops that are not attention."""

    def __init__(self, hand: HandWritten) -> None:
        super().__init__()  # type: ignore[no-untyped-call]  # untyped in torch
        self.hand = hand

    def __torch_dispatch__(self, func: torch._ops.OpOverload[..., Any], types: Sequence[type],
                           args: Sequence[object] = (), kwargs: Mapping[str, object] | None = None) -> Any:
        what = _QUALIFIED.get(func._name)
        if what is not None:
            self.hand.use(f"{what} ({func._name})")
        return func(*args, **(kwargs or {}))
