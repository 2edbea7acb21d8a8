"""What a grading child may touch: one allow-list, and the two kernel layers that enforce it.

The child's world is named, not filtered: it may read the Python runtime (the folders on its
import path and the shared libraries it has loaded), the few system files a library looks up
(``/etc/ld.so.cache``, ``/etc/localtime``), ``/proc`` and ``/sys``; it may read its own copy of
the submission; it may write its home (also its ``TMPDIR``) and its output folder; it may use a few
device files. Nothing else exists for it: no home folder of the grader's, no course, no other
student's work, no gradebook, no kit, no checkout it was started from, and no ``/tmp``.

``World.of_child`` makes the list once; two layers enforce it, each where the kernel allows:

- ``own_root``: a mount namespace whose root is an empty tmpfs holding only bind mounts of the list
  (read-only, and the writable folders ``noexec``, so no library the submission writes can be
  loaded), entered with ``pivot_root`` so that no path leads back to the real root;
- ``landlock``: Linux's Landlock (5.13 and later) denies this process and every thread and process
  it starts any path outside the list, for reads and writes, from Python or from C++; it also
  denies TCP (ABI 4) and signals or abstract sockets that leave the child (ABI 6).

The audit hook (``confine.arm``) stays the first layer a student meets, because it names what was
refused; these two are what hold when code gets past it.
"""
from __future__ import annotations

import ctypes
import glob
import os
import re
import platform
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

from .linux import CLONE_NEWNS, libc

SYSTEM_LIBRARIES = ("/lib", "/lib32", "/lib64", "/libx32", "/usr/lib", "/usr/lib32", "/usr/lib64", "/usr/libx32",
                    "/usr/local/lib")
SYSTEM_FILES = ("/etc/ld.so.cache", "/etc/localtime", "/etc/passwd", "/etc/group", "/etc/nsswitch.conf")
DEVICES = ("/dev/null", "/dev/zero", "/dev/full", "/dev/random", "/dev/urandom")
CUDA_DEVICES = ("/dev/nvidia*", "/dev/nvidia-caps/*", "/dev/dri/*")
CUDA_LIBRARIES = ("/usr/local/cuda*", "/usr/local/nvidia", "/etc/nvidia", "/usr/share/nvidia")
# Read-only. Of /proc, the child's own folder and what libraries read, never another process's: a
# /proc/<pid>/root or /cwd leads into that process's world (the grader's).
KERNEL_VIEWS = ("/proc/self", "/proc/cpuinfo", "/proc/meminfo", "/proc/stat", "/sys")
# CUDA's driver reads the lowest address a mapping may have at its start, and fails without it
# ("OS call failed", error 304).
CUDA_VIEWS = ("/proc/driver/nvidia", "/proc/sys/vm/mmap_min_addr")


@dataclass
class World:
    read: list[str]  # read-only, real paths (no link on the way)
    code: str  # the submission's copy: read-only, and no library or program may be loaded from it
    write: list[str]  # read-write folders, never a place code may be loaded from either
    devices: list[str]  # device files, read and written
    aliases: dict[str, str] = field(default_factory=dict)  # a name on the import path -> the real path it reaches
    home: str | None = None  # the one of ``write`` that is its home: a fresh tmpfs in a root of its own
    # Of ``read``, those also written: its own /proc folder where CUDA runs, whose driver names its
    # threads through /proc/self/task/<thread id>/comm at its start and fails where it cannot.
    views_written: list[str] = field(default_factory=list)

    @classmethod
    def of_child(cls, import_path: Iterable[str], submission: str | os.PathLike[str], home: str | os.PathLike[str],
                 out: str | os.PathLike[str], hidden: Iterable[str] | Iterable[os.PathLike[str]],
                 cuda: bool = False) -> "World":
        """The world of a child that imports from ``import_path`` (the kit's checkout taken off it),
        grades ``submission`` (read-only), writes ``home`` and ``out``, and may not see anything under
        ``hidden`` (the kit, the reference), even where it lies inside the runtime (a kit installed
        into site-packages)."""
        names = [p for p in import_path if p]
        names += [str(Path(p).parent) for p in _mapped_files()]  # the shared libraries loaded, wherever they live
        names += [p for p in (*SYSTEM_LIBRARIES, *os.environ.get("LD_LIBRARY_PATH", "").split(":")) if p]
        names += [*SYSTEM_FILES, *KERNEL_VIEWS]
        if cuda:
            names += [p for pattern in (*CUDA_LIBRARIES, *CUDA_VIEWS) for p in glob.glob(pattern)]
        names = [p for p in names if os.path.exists(p)]
        # The workspace is hidden from the read-only list too: its control folder holds the job files.
        hidden = [os.path.realpath(h) for h in (*hidden, Path(submission).parent)]
        read = _outermost(around([os.path.realpath(p) for p in names], hidden))
        aliases = {p: os.path.realpath(p) for p in names
                   if os.path.realpath(p) != p and not _within_any(os.path.realpath(p), hidden)}
        devices = [p for p in DEVICES if os.path.exists(p)]
        if cuda:
            devices += [p for pattern in CUDA_DEVICES for p in glob.glob(pattern) if not os.path.isdir(p)]
        written = [os.path.realpath("/proc/self")] if cuda else []
        home, out = os.path.realpath(home), os.path.realpath(out)
        return cls(read, os.path.realpath(submission), [home, out], devices, aliases, home, written)


def around(paths: Iterable[str], hidden: Sequence[str]) -> list[str]:
    """``paths`` less whatever lies under ``hidden``: a path that holds a hidden one is replaced by
    its other entries, and so on down (a loop, not recursion)."""
    found, todo = [], list(paths)
    while todo:
        path = todo.pop()
        if _within_any(path, hidden):
            continue
        if not any(_within(h, path) for h in hidden):
            found.append(path)
        elif os.path.isdir(path) and not os.path.islink(path):
            todo.extend(os.path.join(path, name) for name in os.listdir(path))
    return found


def _within(path: str, root: str) -> bool:
    return path == root or path.startswith(root.rstrip("/") + "/")


def _within_any(path: str, roots: Iterable[str]) -> bool:
    return any(_within(path, r) for r in roots)


def _outermost(paths: Iterable[str]) -> list[str]:
    """Each path once, and none that lies inside another."""
    kept: list[str] = []
    for path in sorted(set(paths), key=len):
        if not _within_any(path, kept):
            kept.append(path)
    return kept


def _mapped_files() -> list[str]:
    """Regular files this process has mapped (its shared libraries), from /proc/self/maps."""
    found: set[str] = set()
    try:
        with open("/proc/self/maps") as f:
            for line in f:
                parts = line.split(maxsplit=5)
                if len(parts) == 6 and parts[5].startswith("/") and not parts[5].rstrip().endswith("(deleted)"):
                    found.add(parts[5].rstrip("\n"))
    except OSError:
        pass
    return sorted(p for p in found if os.path.isfile(p) and not p.startswith(("/dev/", "/proc/", "/sys/")))


# ---------------------------------------------------------------- layer 1: a root of its own

MS_RDONLY, MS_NOSUID, MS_NODEV, MS_NOEXEC, MS_REMOUNT = 1, 2, 4, 8, 32
MS_BIND, MS_REC, MS_PRIVATE = 4096, 16384, 1 << 18
MS_NOATIME, MS_NODIRATIME, MS_RELATIME, MNT_DETACH = 1024, 2048, 1 << 21, 2
_ST_RELATIME = 4096
SYS_PIVOT_ROOT = {"x86_64": 155, "aarch64": 41, "arm64": 41}.get(platform.machine())
# The child's home (its TMPDIR too) in a root of its own: a fresh tmpfs, not the workspace's folder, so
# that what it writes there is bounded in total (not only per file, RLIMIT_FSIZE) and gone when it ends.
# Graded code needs scratch space at most; four files of the 16 MiB any one file may hold.
HOME_BYTES = 64 * 2**20
HOME_INODES = 4096  # files and folders: a tree of thousands of folders ends here, with ENOSPC


class NoRoot(Exception):
    """The child's own root could not be made: ``str()`` says which step failed."""


def own_mount_namespace() -> bool:
    """Move into a mount namespace of our own whose mounts propagate nowhere (root, or the holder of
    a user namespace of its own): True when it did."""
    return bool(libc.unshare(CLONE_NEWNS) == 0 and libc.mount(b"none", b"/", None, MS_REC | MS_PRIVATE, None) == 0)


def own_proc() -> bool:
    """Mount a /proc of this process's PID namespace over the one it inherited, in a mount namespace
    of its own (``confine.namespaces``): True when it did. The inherited /proc is the grader's, where
    the child's pid and its threads' ids are not the ones it knows itself by, so /proc/self/task/<its
    thread id> is missing or another's; CUDA's driver names its threads through that path at its
    start and fails without it ("OS call failed", error 304). The fresh /proc shows the namespace
    alone: the child (and its init, pid 1), never the grader or another child."""
    return bool(libc.mount(b"proc", b"/proc", b"proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, None) == 0)


def own_root(world: World, stash: str | os.PathLike[str], uid: int | None = None, gid: int | None = None) -> None:
    """Make the calling process's root an empty tmpfs that holds ``world`` and nothing else, in a
    mount namespace it already has of its own (``confine.namespaces``). Raises ``NoRoot``.

    Every name is laid out on the tmpfs before the first bind mount, so nothing is ever created
    inside a bound folder (on the real disk). The old root is detached after ``pivot_root``: unlike a
    chroot, no ``..`` and no second chroot lead back to it. The home is no bind of the workspace's
    folder but a fresh tmpfs (``HOME_BYTES``), 0700 and owned by ``uid``:``gid`` (the user the child
    becomes; None: who it is now), so the child can fill only its own, bounded home, as root or not."""
    if SYS_PIVOT_ROOT is None:
        raise NoRoot(f"pivot_root's number is not known on {platform.machine()}")
    new = Path(stash) / "root"
    new.mkdir(parents=True, exist_ok=True)
    _mount("tmpfs", new, "tmpfs", MS_NOSUID | MS_NODEV, "mode=0755,size=1m")
    read_only, no_code = MS_RDONLY, MS_NOEXEC | MS_NOSUID | MS_NODEV
    viewed: Callable[[str], int] = lambda source: no_code if source in world.views_written else read_only  # noqa: E731
    binds = [(p, p, viewed(p)) for p in world.read]
    binds += [(target, name, viewed(target)) for name, target in world.aliases.items()]
    binds += [(world.code, world.code, read_only | no_code)] + [(p, p, no_code) for p in world.write if p != world.home]
    binds += [(d, d, MS_NOEXEC | MS_NOSUID) for d in world.devices]
    places = _outermost([name for _, name, _ in binds])
    binds = [b for b in binds if b[1] in places]
    for source, name, _ in binds:  # the layout, on the tmpfs alone
        spot = new / name.lstrip("/")
        if os.path.isdir(source):
            spot.mkdir(parents=True, exist_ok=True)
        else:
            spot.parent.mkdir(parents=True, exist_ok=True)
            spot.touch()
    if world.home is not None:
        home = new / world.home.lstrip("/")
        home.mkdir(parents=True, exist_ok=True)
        tmpfs(home, HOME_BYTES, HOME_INODES, 0o700, uid, gid)
    for source, name, flags in binds:
        spot = new / name.lstrip("/")
        _mount(source, spot, None, MS_BIND | MS_REC)
        _mount(None, spot, None, MS_REMOUNT | MS_BIND | _locked_flags(source) | flags)
    read_only_spots = [new / name.lstrip("/") for _, name, flags in binds if flags & MS_RDONLY]
    for inner in _mounts_below(read_only_spots):  # a bind takes the mounts below it (/sys/fs/cgroup): read-only too
        _mount(None, inner, None, MS_REMOUNT | MS_BIND | _locked_flags(inner) | MS_RDONLY)
    _mount(None, new, None, MS_REMOUNT | MS_RDONLY | MS_NOSUID | MS_NODEV)
    os.chdir(new)
    if libc.syscall(SYS_PIVOT_ROOT, b".", b".") != 0:
        raise NoRoot(f"pivot_root failed ({os.strerror(ctypes.get_errno())})")
    if libc.umount2(b".", MNT_DETACH) != 0:  # the old root, stacked on top by pivot_root(".", ".")
        raise NoRoot(f"the old root could not be detached ({os.strerror(ctypes.get_errno())})")
    os.chdir("/")


def _mounts_below(tops: Iterable[str] | Iterable[os.PathLike[str]]) -> list[str]:
    """Mount points strictly below any of ``tops``, from /proc/self/mountinfo (its fifth field; spaces
    and the like come escaped as octal)."""
    tops = [str(t) for t in tops]
    with open("/proc/self/mountinfo") as f:
        points = [re.sub(r"\\([0-7]{3})", lambda m: chr(int(m.group(1), 8)), line.split()[4]) for line in f]
    return [p for p in points if any(p.startswith(t.rstrip("/") + "/") for t in tops)]


def _locked_flags(source: str | os.PathLike[str]) -> int:
    """The flags of the mount ``source`` lies on that a remount must keep (in a user namespace they
    are locked: leaving one out fails)."""
    flags = os.statvfs(source).f_flag
    kept = flags & (MS_NOSUID | MS_NODEV | MS_NOEXEC | MS_NOATIME | MS_NODIRATIME)
    return kept | (MS_RELATIME if flags & _ST_RELATIME else 0) | (MS_RDONLY if flags & MS_RDONLY else 0)


def tmpfs(target: str | os.PathLike[str], size: int, inodes: int, mode: int, uid: int | None = None,
          gid: int | None = None, flags: int = MS_NOSUID | MS_NODEV | MS_NOEXEC) -> None:
    """Mount a fresh tmpfs on ``target``: at most ``size`` bytes and ``inodes`` files and folders, its
    top folder ``mode`` and owned by ``uid``:``gid`` (None: the caller). No program or library written
    there can be run (``MS_NOEXEC``). Raises ``NoRoot`` when it cannot be mounted."""
    owner = "".join(f",{key}={value}" for key, value in (("uid", uid), ("gid", gid)) if value is not None)
    _mount("tmpfs", target, "tmpfs", flags, f"size={size},nr_inodes={inodes},mode={mode:04o}{owner}")


def _mount(source: str | os.PathLike[str] | None, target: str | os.PathLike[str], fstype: str | None, flags: int,
           data: str | None = None) -> None:
    encode: Callable[[object], bytes | None] = lambda v: None if v is None else os.fsencode(str(v))  # noqa: E731
    if libc.mount(encode(source), encode(target), encode(fstype), flags, encode(data)) != 0:
        raise NoRoot(f"mounting {source or 'again'} on {target} failed ({os.strerror(ctypes.get_errno())})")


# ---------------------------------------------------------------- layer 2: Landlock


class _Bindings(Protocol):
    """What is asked of the landlockpy module itself."""

    def abi_version(self) -> int: ...


def _bindings() -> _Bindings | None:
    try:
        import landlockpy
    except ImportError:
        return None
    return landlockpy


def landlock_abi() -> int:
    """The kernel's Landlock ABI version; 0 where there is none (an old kernel, Landlock off at
    boot, a seccomp filter that refuses its calls, or the bindings not installed)."""
    bindings = _bindings()
    try:
        return bindings.abi_version() if bindings is not None else 0
    except OSError:
        return 0


def landlock_unavailable() -> str | None:
    """Why a child here cannot have Landlock, in words; None when it can."""
    if _bindings() is None:
        return "the landlockpy package is not installed"
    if landlock_abi() == 0:
        return ("its kernel has no Landlock (Linux 5.13 or later, with landlock among its security modules, and "
                "not refused by a seccomp filter)")
    return None


def landlock(world: World) -> int:
    """Deny this process, its threads and everything it starts every path outside ``world``, and
    TCP, and signals and abstract sockets to processes outside it, for good. Returns the Landlock
    ABI it was enforced with; raises ``OSError`` (or ``ImportError``) when it could not be."""
    from landlockpy import AccessFS, AccessNet, RestrictFlag, Ruleset, Scope

    read_files = AccessFS.READ_FILE
    read = read_files | AccessFS.READ_DIR
    write_files = read_files | AccessFS.WRITE_FILE | AccessFS.TRUNCATE
    write = (read | write_files | AccessFS.MAKE_REG | AccessFS.MAKE_DIR | AccessFS.REMOVE_FILE
             | AccessFS.REMOVE_DIR | AccessFS.REFER)
    device = read_files | AccessFS.WRITE_FILE | AccessFS.IOCTL_DEV
    with Ruleset(handled_net=AccessNet.BIND_TCP | AccessNet.CONNECT_TCP | AccessNet.BIND_UDP
                 | AccessNet.CONNECT_SEND_UDP, scoped=Scope.ABSTRACT_UNIX_SOCKET | Scope.SIGNAL) as rules:
        for path in [*world.read, world.code]:
            rules.allow_path(path, read if os.path.isdir(path) else read_files)
        for path in world.write:
            rules.allow_path(path, write)
        for path in world.views_written:
            rules.allow_path(path, read | write_files)
        for path in world.devices:
            rules.allow_path(path, device)
        rules.restrict(RestrictFlag.TSYNC)  # every thread, where the kernel can (ABI 8); best effort below
        return rules.abi_version
