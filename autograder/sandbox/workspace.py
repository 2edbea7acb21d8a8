"""Where a submission is graded, and as whom: the grading process's side of the isolation.

Each grading run gets a fresh folder holding the submission's ``attention_lab/`` as intake read
it (its ``.py`` files, never through a link; a ``conftest.py``, ``torch.py`` or ``sitecustomize.py``
shipped beside it never reaches the child), a home folder, and one folder per child for its results.

Run as root, the child drops to a user id from ``CHILD_UID`` on that owns no files and runs
nothing else (``forkserver`` hands them out), so every process left with that id after a child
ends is a straggler to kill. The kit's own files are not in the child's world (``world``); where
the machine gives children no root of their own (a container without CAP_SYS_ADMIN), they are
made readable by root only on disk as well, and the grader says so. Run as anyone
else, the child stays that user, and the stragglers are found by a mark in their environment,
which every descendant inherits (the child may not exec a program with a fresh one); this
process becomes the "subreaper" of orphans, so none of them is lost to init before it is killed.

As root, the workspace is a tmpfs of its own, and so are its home and each child's output folder
(``Workspace.disk``): a child can fill only what is its own, bounded in bytes and in files, never the
grader's disk or the grader's own files, and the next student starts on a fresh one. Where no tmpfs
can be mounted (an ordinary user, a container without CAP_SYS_ADMIN) it is a folder on disk, and
``disk_why`` says why. Clean-up never fails on what a child left: an unmount, or ``remove_tree``.
"""
from __future__ import annotations

import ctypes
import fcntl
import importlib.machinery
import importlib.util
import os
import site
import stat
import sys
import tempfile
import time
from collections.abc import Mapping
from functools import lru_cache
from pathlib import Path
from typing import Any, Protocol

from ..common.limits import MAX_SUBMISSION_BYTES, MAX_SUBMISSION_FILES
from ..paths import KIT_PACKAGE, KIT_ROOT
from ..common.regular_files import NotRegular, TooLarge, read_regular
from . import protocol, world
from .linux import libc

CHILD_UID = 65500  # no login, no files; 65000-65533 is never handed out to users
RESULT_MAX_BYTES = 8 * 2**20  # no probe result comes near this (the reference's largest is 0.2 MB)
# What the grader reads of one child's results together: eight of the largest. The reference's whole
# run (every stage, 154 results) is 2.3 MB; a layer that also makes a 1400 x 1400 softmax writes 8 MB.
CHILD_RESULTS_MAX_BYTES = 64 * 2**20

# Where the grader can mount them (root): sizes are caps, a tmpfs holds only what is written.
TMPFS, FOLDER = "tmpfs", "folder"
WORKSPACE_BYTES = 256 * 2**20  # the submission (MAX_SUBMISSION_BYTES), job files, a child's error output (16 MiB)
WORKSPACE_INODES = 16384  # the submission's files (MAX_SUBMISSION_FILES) and folders, and four per child
assert WORKSPACE_BYTES > 4 * MAX_SUBMISSION_BYTES and WORKSPACE_INODES > 4 * MAX_SUBMISSION_FILES
OUTPUT_BYTES = 2 * CHILD_RESULTS_MAX_BYTES  # one child's output folder: the results the grader reads, and room
OUTPUT_INODES = 4096  # a result per task (a whole plan has fewer than 200) and the child's marks
STALE_S = 600  # a tmpfs workspace with no lock file, this old, is a grading's that was killed as it began


def is_root() -> bool:
    return os.geteuid() == 0


def secrets() -> list[Path]:
    """What graded code must not read: the kit's package (checks, golden data) and the reference."""
    found = [KIT_PACKAGE]
    if (KIT_ROOT / "solutions").is_dir():
        found.append(KIT_ROOT / "solutions")
    return found


@lru_cache(maxsize=1)
def children_own_root() -> bool:
    """Can each child have a root of its own, which holds nothing of the kit (``world.own_root``)?"""
    from .confine import can_own_root

    return can_own_root()


def lock_secrets() -> None:
    """As root, where no child can have a root of its own, make the secrets unreadable to
    ``CHILD_UID`` on disk if they are not already (0700): the fallback, said once per folder."""
    for path in secrets():
        if _others_can_reach(path):
            os.chmod(path, 0o700)
            print(f"attention-lab: made {path} readable by root only, so graded code cannot read it (this machine "
                  "gives the grader no mount namespace to hide it in)", file=sys.stderr)


def _others_can_reach(path: Path) -> bool:
    """Can a user who owns nothing and has no groups list or enter ``path``?"""
    for parent in reversed(path.parents):
        if not os.stat(parent).st_mode & stat.S_IXOTH:
            return False
    return bool(os.stat(path).st_mode & (stat.S_IROTH | stat.S_IXOTH))


class Submission(Protocol):
    """What the sandbox takes of intake's ``Submission`` (it imports nothing of intake): the workspace
    and the runner."""

    left_out: dict[str, str]
    replaced: dict[str, str]

    def package_files(self) -> dict[str, bytes]: ...


class Workspace:
    """``disk``: ``TMPFS`` (the workspace, its home and each child's output folder are tmpfs mounts of
    their own, bounded as ``disk_limits`` says) or ``FOLDER`` (a folder on the grader's disk, bounded per
    file only: ``disk_why`` says why)."""

    def __init__(self, submission: Submission, uid: int | None = None, gid: int | None = None) -> None:
        """``uid``, ``gid``: the unprivileged user the child becomes (None: it stays who we are)."""
        self.uid, self.gid = uid, gid
        self.own_root = "namespaces" in protocol.KERNEL_LAYERS and children_own_root()
        if self.uid is not None and not self.own_root:
            lock_secrets()
        self.children = self.sides = 0
        self.root = Path(tempfile.mkdtemp(prefix="attention-lab-")).resolve()
        self.disk, self.disk_why = self._own_disk()
        self.disk_limits = (f"{WORKSPACE_BYTES // 2**20} MiB and {WORKSPACE_INODES} files; its home "
                            f"{world.HOME_BYTES // 2**20} MiB and {world.HOME_INODES} files, each output folder "
                            f"{OUTPUT_BYTES // 2**20} MiB and {OUTPUT_INODES} files") if self.disk == TMPFS else None
        self.control = self.root / "control"  # job files and stderr: the child cannot touch them
        self.submission = self.root / "submission"
        self.empty = self.root / "nothing"  # the submission of a child of the kit's own: it grades none
        self._lock: int | None = None
        try:
            self.control.mkdir()
            if self.disk == TMPFS:  # held while this grading lives: see reclaim_stale
                # Locked under another name, then named: a grading starting beside this one (its
                # reclaim_stale) never finds the lock there and free, and unmounts a live workspace.
                self._lock = os.open(self.control / "lock.new", os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
                fcntl.flock(self._lock, fcntl.LOCK_EX)
                os.rename(self.control / "lock.new", self.control / "lock")
            package = self.submission / "attention_lab"
            _write_package(submission.package_files(), package)
            self.empty.mkdir(mode=0o755)
            # Module files intake left out (a link, a FIFO), and no notebook replaced: every check of them says why.
            self.left_out = {m: why for m, why in submission.left_out.items() if m not in submission.replaced}
            self.home = self._child_owned(self.root / "home", world.HOME_BYTES, world.HOME_INODES)
        except BaseException:
            self.remove()
            raise
        if self.uid is not None:
            os.chmod(self.root, 0o711)  # the child may pass through, not list
            os.chmod(self.control, 0o700)

    def _own_disk(self) -> tuple[str, str | None]:
        """(TMPFS, None) once a tmpfs is mounted on the fresh folder, else (FOLDER, why not)."""
        if not is_root():
            return FOLDER, "only root may mount a tmpfs for the workspace"
        reclaim_stale()
        try:
            world.tmpfs(self.root, WORKSPACE_BYTES, WORKSPACE_INODES, 0o700)
        except world.NoRoot as exc:  # a container without CAP_SYS_ADMIN
            return FOLDER, str(exc)
        return TMPFS, None

    def child_dir(self) -> Path:
        """A fresh output folder for the next child. The last child's is released first, with its error
        output: the grader has read them by now, and what one child wrote must not take the space of the
        next, or of the grader's own files."""
        if self.children:
            last = self.root / f"child{self.children}"
            try:  # where runner._one_child has the fork server write it; a name only, never followed
                os.unlink(self.control / f"{last.name}.stderr")
            except OSError:
                pass
            self.drop(last)
        self.children += 1
        return self._child_owned(self.root / f"child{self.children}", OUTPUT_BYTES, OUTPUT_INODES)

    def side_dir(self, name: str, home: bool = False) -> Path:
        """A fresh folder only a child may use (an output folder, or with ``home`` a home), for a child that
        runs while another has its own: a race's child of the kit's own. Its caller drops it (``drop``)."""
        self.sides += 1
        size, inodes = (world.HOME_BYTES, world.HOME_INODES) if home else (OUTPUT_BYTES, OUTPUT_INODES)
        return self._child_owned(self.root / f"{name}{self.sides}", size, inodes)

    def _child_owned(self, path: Path, size: int, inodes: int) -> Path:
        """A folder only the child may use: a tmpfs of ``size`` bytes and ``inodes`` files where the
        workspace is one (owned by the child's user from the start), else a folder it owns."""
        path.mkdir(mode=0o700)
        if self.disk == TMPFS:
            try:
                world.tmpfs(path, size, inodes, 0o700, self.uid, self.gid)
                return path
            except world.NoRoot:  # the workspace's own tmpfs bounds it then
                pass
        if self.uid is not None:
            assert self.gid is not None  # given with uid by every caller
            os.chown(path, self.uid, self.gid)
        return path

    def env(self, base: Mapping[str, str]) -> dict[str, str]:
        """The child's environment: ``base`` (the fork server's) with a home in the workspace."""
        return {**base, "HOME": str(self.home), "TMPDIR": str(self.home)}

    def remove(self) -> None:
        """Remove the workspace, whatever the child left in it; never raises. What could not be removed
        is said on stderr, in one line (grading goes on: it is the grader's mess, not the student's)."""
        self.drop(self.root)
        if self._lock is not None:
            os.close(self._lock)
            self._lock = None

    def drop(self, path: Path) -> None:
        """Remove ``path``, the workspace or a folder in it: a tmpfs is detached (with every mount in it)
        and its empty folder removed; a folder on disk is emptied by ``remove_tree``."""
        unmounted = ""
        if self.disk == TMPFS and libc.umount2(os.fsencode(path), world.MNT_DETACH) != 0:
            unmounted = f" (it could not be unmounted: {os.strerror(ctypes.get_errno())})"
        left = remove_tree(path)
        if left:
            print(f"attention-lab: {left}{unmounted}", file=sys.stderr)


def reclaim_stale() -> None:
    """Unmount and remove the tmpfs workspaces of gradings that were killed (``kill -9`` cannot clean
    up, and a tmpfs holds its memory until unmounted): those whose lock (``control/lock``, held while
    their grading lives) can be taken, or that have none and are ``STALE_S`` old. Never raises."""
    tmp = os.path.realpath(tempfile.gettempdir())
    try:
        points = [p for p in world._mounts_below([tmp])
                  if os.path.dirname(p) == tmp and os.path.basename(p).startswith("attention-lab-")]
    except OSError:
        return
    for point in points:
        lock: int | None = None
        try:
            try:
                lock = os.open(os.path.join(point, "control", "lock"), os.O_RDWR | os.O_NOFOLLOW | os.O_CLOEXEC)
            except FileNotFoundError:
                if time.time() - os.stat(point).st_mtime < STALE_S:
                    continue
            if lock is not None:
                fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)  # fails while its grading lives
            if libc.umount2(os.fsencode(point), world.MNT_DETACH) == 0:
                os.rmdir(point)
        except OSError:
            pass
        finally:
            if lock is not None:
                os.close(lock)


def _write_package(files: dict[str, bytes], package: Path) -> None:
    """Write the package as intake read it (``files``: relative path -> bytes, ``package_files``: read
    from regular files only, never through a link, with the code taken from notebooks over its modules),
    the same files that the source review reads. Nothing of the student's is opened here: the bytes were
    read once, so what is graded is what was checked. The child, another user as root, may read the
    package and write nothing into it."""
    package.mkdir(parents=True)
    for rel, data in files.items():
        target = package / rel
        target.parent.mkdir(parents=True, exist_ok=True, mode=0o755)
        target.write_bytes(data)
        target.chmod(0o644)
    for folder in (package.parent, package):
        folder.chmod(0o755)


def read_small(path: str | os.PathLike[str], limit: int = RESULT_MAX_BYTES) -> bytes | None:
    """Bytes of a file the child wrote, or None: never follows a link, never blocks on a FIFO,
    never reads more than ``limit`` (``regular_files.read_regular``, as intake reads a student's files)."""
    try:
        return read_regular(path, limit)
    except NotRegular:
        return None


def read_result(path: str | os.PathLike[str], limit: int) -> bytes | str | None:
    """A result file the child wrote: its bytes (as ``read_small``), None where there is no regular file
    of that name, or why it was not read (a str) where it is one larger than ``limit``: the result of
    a task that ran, which the grader refuses, rather than a task that never ended."""
    try:
        return read_regular(path, limit)
    except TooLarge as exc:
        return f"{Path(path).name} is {exc}"
    except NotRegular:
        return None


_FOLDER = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_Level = list[Any]  # one of ``_remove_in``'s levels: [its name, its identity, folders in it left to visit]


class _Remover(Protocol):
    """``os.unlink`` or ``os.rmdir``."""

    def __call__(self, path: str, /, *, dir_fd: int) -> None: ...


def remove_tree(top: str | os.PathLike[str]) -> str | None:
    """Remove ``top`` and everything in it, whatever a child left there; never raises. Returns None, or
    one sentence saying what could not be removed.

    A child may leave a tree thousands of folders deep (past Python's recursion limit, and past the
    files one process may hold open), folders made read-only, links and FIFOs. So this is a loop with
    one folder open at a time: it goes down by name, opened with O_NOFOLLOW from its folder (never
    through a link), and back up by ``..``, checked against the folder it came from (a list of names
    and identities, not of descriptors). It makes a folder it must empty writable (0700), stays on one
    file system (a mount point is left, and said), and goes on past whatever it cannot remove."""
    left = _Left(os.path.normpath(os.fspath(top)))
    parent, name = os.path.split(left.top)
    try:
        base = os.open(parent or ".", _FOLDER)
    except OSError as exc:
        return f"could not open {ascii(parent)} to remove {ascii(name)} ({exc.strerror})"
    try:
        _remove_in(base, name, left)
    except OSError as exc:  # the grader's own descriptors failed: say so, never raise
        left.add([], None, exc.strerror)
    finally:
        os.close(base)
    return left.sentence()


def _remove_in(base: int, name: str, left: _Left) -> None:
    try:
        info = os.stat(name, dir_fd=base, follow_symlinks=False)
    except FileNotFoundError:
        return
    except OSError as exc:
        left.add([[name]], None, exc.strerror)
        return
    if not stat.S_ISDIR(info.st_mode):
        _remove(os.unlink, base, name, [], left)
        return
    fd = _enter(base, name, info, [], left)
    if fd is None:
        return
    # One entry per folder from ``name`` down to the open one: [its name, its identity, folders in it left to visit].
    levels: list[_Level] = [[name, (info.st_dev, info.st_ino), None]]
    try:
        levels[-1][2] = _empty(fd, info.st_dev, levels, left)
        while levels:
            todo = levels[-1][2]
            if todo:
                sub, sub_info = todo.pop()
                inner = _enter(fd, sub, sub_info, levels, left)
                if inner is not None:
                    os.close(fd)
                    fd = inner
                    levels.append([sub, (sub_info.st_dev, sub_info.st_ino), None])
                    levels[-1][2] = _empty(fd, sub_info.st_dev, levels, left)
                continue
            done = levels.pop()[0]
            if levels:
                up = os.open("..", _FOLDER, dir_fd=fd)
                os.close(fd)
                fd = up
                seen = os.fstat(fd)
                if (seen.st_dev, seen.st_ino) != levels[-1][1]:  # moved while being removed: stop, never stray
                    left.add(levels, done, "it was moved while being removed")
                    return
            _remove(os.rmdir, fd if levels else base, done, levels, left)
    finally:
        os.close(fd)


def _enter(fd: int, name: str, info: os.stat_result, levels: list[_Level], left: _Left) -> int | None:
    """A descriptor of folder ``name`` in ``fd``, made 0700 first if the child closed it; None if it cannot be."""
    if info.st_mode & 0o700 != 0o700:
        try:
            os.chmod(name, 0o700, dir_fd=fd, follow_symlinks=False)
        except (OSError, ValueError, NotImplementedError):
            pass  # opening it says what is wrong
    try:
        inner = os.open(name, _FOLDER, dir_fd=fd)
    except OSError as exc:
        left.add(levels, name, exc.strerror)
        return None
    seen = os.fstat(inner)
    if (seen.st_dev, seen.st_ino) != (info.st_dev, info.st_ino):
        os.close(inner)
        left.add(levels, name, "it was replaced while being removed")
        return None
    return inner


def _empty(fd: int, dev: int, levels: list[_Level], left: _Left) -> list[tuple[str, os.stat_result]]:
    """Remove everything in folder ``fd`` that is not a folder; returns its folders (name, stat) on ``dev``."""
    try:
        with os.scandir(fd) as entries:
            found = [(entry.name, entry.stat(follow_symlinks=False)) for entry in entries]
    except OSError as exc:
        left.add(levels, None, exc.strerror)
        return []
    folders: list[tuple[str, os.stat_result]] = []
    for name, info in found:
        if not stat.S_ISDIR(info.st_mode):
            _remove(os.unlink, fd, name, levels, left)
        elif info.st_dev != dev:
            left.add(levels, name, "a mount point")
        else:
            folders.append((name, info))
    return folders


def _remove(remove: _Remover, fd: int, name: str, levels: list[_Level], left: _Left) -> None:
    """``remove`` (``os.unlink`` or ``os.rmdir``) ``name`` in folder ``fd``; what fails is noted in ``left``."""
    try:
        remove(name, dir_fd=fd)
    except FileNotFoundError:
        pass
    except OSError as exc:
        left.add(levels, name, exc.strerror)


class _Left:
    """What ``remove_tree`` could not remove: how many, and the first, for one line."""

    first: tuple[str, str | None] | None  # (its path, why)

    def __init__(self, top: str) -> None:
        self.top, self.count, self.first = top, 0, None

    def add(self, levels: list[_Level], name: str | None, why: str | None) -> None:
        self.count += 1
        if self.first is None:  # the path is built once: a tree may be thousands of folders deep
            names = [level[0] for level in levels] + ([name] if name is not None else [])
            path = os.path.join(os.path.dirname(self.top), *names) if names else self.top
            self.first = (path if len(path) <= 160 else f"{path[:80]}...{path[-60:]}", why)

    def sentence(self) -> str | None:
        if not self.count:
            return None
        assert self.first is not None  # set by the first add
        path, why = self.first
        more = f" and {self.count - 1} more" if self.count > 1 else ""
        return f"could not remove {ascii(path)} ({why}){more}, left by the grading in {ascii(self.top)}"


def site_paths() -> list[str]:
    """The interpreter's import path less the kit and the working folder: what the child may use."""
    roots = tuple({sys.prefix, sys.base_prefix, sys.exec_prefix, sys.base_exec_prefix})
    user = site.getusersitepackages() if site.ENABLE_USER_SITE else None
    return [p for p in dict.fromkeys(sys.path)
            if p and (p.startswith(roots) or p == user) and Path(p).resolve() != KIT_ROOT]


BINDINGS = ("landlockpy", "pyseccomp")  # the Python bindings of two kernel layers (world.landlock, syscalls)


@lru_cache(maxsize=None)
def bindings_out_of_reach(names: tuple[str, ...] = BINDINGS) -> dict[str, str]:
    """Those of ``names`` that this process finds outside the folders graded code gets (``site_paths``):
    name -> where it is. The child then runs without that layer, and only its isolation line says so:
    bindings installed on PYTHONPATH or with pip's --target (seen on a GPU machine)."""
    found, reach = {}, site_paths()
    for name in names:
        here = importlib.util.find_spec(name)
        if here is not None and importlib.machinery.PathFinder.find_spec(name, reach) is None:
            found[name] = str(Path(here.origin).parent) if here.origin else name  # where this process has it
    return found
