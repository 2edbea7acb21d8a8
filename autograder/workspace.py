"""Where a submission is graded, and as whom: the grading process's side of the isolation.

Each grading run gets a fresh folder holding a copy of the submission's ``attention_lab/`` and
nothing else of it (a ``conftest.py``, ``torch.py`` or ``sitecustomize.py`` shipped beside it
never reaches the child), a home folder, and one folder per child for its results.

Run as root, the child drops to a user id from ``CHILD_UID`` on that owns no files and runs
nothing else (``forkserver`` hands them out), so the kit's own files can be made unreadable to
it and every process left with that id after a child ends is a straggler to kill. Run as anyone
else, the child stays that user, and the stragglers are found by a mark in their environment,
which every descendant inherits (the child may not exec a program with a fresh one); this
process becomes the "subreaper" of orphans, so none of them is lost to init before it is killed.
"""
from __future__ import annotations

import ctypes
import os
import shutil
import signal
import stat
import sys
import tempfile
from pathlib import Path

KIT_PACKAGE = Path(__file__).resolve().parent
KIT_PARENT = KIT_PACKAGE.parent
CHILD_UID = 65500  # no login, no files; 65000-65533 is never handed out to users
MAX_COPY_BYTES = 20 * 2**20
MAX_COPY_FILES = 1000
RESULT_MAX_BYTES = 8 * 2**20  # no probe result comes near this


class CopyError(Exception):
    """The submission cannot be copied for grading (too large, unreadable): a message for the user."""


def is_root():
    return os.geteuid() == 0


def secrets():
    """What graded code must not read: the kit's package (checks, golden data) and the reference."""
    found = [KIT_PACKAGE]
    if (KIT_PARENT / "solutions").is_dir():
        found.append(KIT_PARENT / "solutions")
    return found


def lock_secrets():
    """As root, make the secrets unreadable to ``CHILD_UID`` if they are not already (0700)."""
    for path in secrets():
        if _others_can_reach(path):
            os.chmod(path, 0o700)
            print(f"attention-lab: made {path} readable by root only, so graded code cannot read it",
                  file=sys.stderr)


def _others_can_reach(path):
    """Can a user who owns nothing and has no groups list or enter ``path``?"""
    for parent in reversed(path.parents):
        if not os.stat(parent).st_mode & stat.S_IXOTH:
            return False
    return bool(os.stat(path).st_mode & (stat.S_IROTH | stat.S_IXOTH))


class Workspace:
    def __init__(self, submission, uid=None, gid=None):
        """``uid``, ``gid``: the unprivileged user the child becomes (None: it stays who we are)."""
        self.uid, self.gid = uid, gid
        if self.uid is not None:
            lock_secrets()
        self.root = Path(tempfile.mkdtemp(prefix="attention-lab-")).resolve()
        self.control = self.root / "control"  # job files and stderr: the child cannot touch them
        self.control.mkdir()
        self.submission = self.root / "submission"
        try:
            package = self.submission / "attention_lab"
            if submission.package is not None:
                _copy_package(submission.package, package)
            _write_modules(submission.replaced, package)
            _readable_by_all(package)
        except BaseException:
            self.remove()
            raise
        self.home = self._child_owned(self.root / "home")
        if self.uid is not None:
            os.chmod(self.root, 0o711)  # the child may pass through, not list
            os.chmod(self.control, 0o700)
        self.children = 0

    def child_dir(self):
        self.children += 1
        return self._child_owned(self.root / f"child{self.children}")

    def _child_owned(self, path):
        path.mkdir(mode=0o700)
        if self.uid is not None:
            os.chown(path, self.uid, self.gid)
        return path

    def env(self, base):
        """The child's environment: ``base`` (the fork server's) with a home in the workspace."""
        return {**base, "HOME": str(self.home), "TMPDIR": str(self.home)}

    def remove(self):
        shutil.rmtree(self.root, ignore_errors=True)


def _copy_package(src: Path, dst: Path):
    """Copy the student's package: regular files and folders only, never following a link
    (a link to the golden data would otherwise be copied by root into the sandbox)."""
    total = files = 0
    for folder, dirs, names in os.walk(src):
        rel = Path(folder).relative_to(src)
        dirs[:] = [d for d in dirs if d != "__pycache__" and not (Path(folder) / d).is_symlink()]
        (dst / rel).mkdir(parents=True, exist_ok=True)
        for name in names:
            path = Path(folder) / name
            info = path.lstat()
            if not stat.S_ISREG(info.st_mode):
                continue
            total, files = total + info.st_size, files + 1
            if total > MAX_COPY_BYTES or files > MAX_COPY_FILES:
                raise CopyError(f"{src} holds more than {MAX_COPY_FILES} files or "
                                f"{MAX_COPY_BYTES // 2**20} MiB; remove data files that are not code")
            shutil.copyfile(path, dst / rel / name, follow_symlinks=False)


def _write_modules(replaced: dict, package: Path):
    """Write code taken from notebooks over the copied modules (names are the lab's own)."""
    package.mkdir(parents=True, exist_ok=True)
    init = package / "__init__.py"
    if not init.exists():
        init.write_text("")
    for module, code in replaced.items():
        (package / f"{module}.py").write_text(code, encoding="utf-8")


def _readable_by_all(package: Path):
    """The child, another user as root, reads the package and writes nothing into it."""
    for folder, _, names in os.walk(package):
        os.chmod(folder, 0o755)
        for name in names:
            os.chmod(Path(folder) / name, 0o644)


def read_small(path, limit=RESULT_MAX_BYTES):
    """Bytes of a file the child wrote, or None: never follows a link, never blocks on a FIFO,
    never reads more than ``limit``."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError:
        return None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode) or info.st_size > limit:
            return None
        with os.fdopen(fd, "rb", closefd=False) as f:
            return f.read(limit + 1)[:limit]
    finally:
        os.close(fd)


# ---------------------------------------------------------------- processes

PR_SET_CHILD_SUBREAPER = 36


def become_subreaper():
    """Orphans of our children become ours instead of init's, so they can be found and killed."""
    if sys.platform.startswith("linux"):
        libc = ctypes.CDLL(None, use_errno=True)  # libc, already loaded (find_library would run ldconfig/gcc)
        libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)


def proc_stat(pid):
    """The fields of ``/proc/<pid>/stat`` after the command name (state first), or None."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            return f.read().rsplit(b")", 1)[1].split()  # the name may hold spaces and ")"
    except (OSError, IndexError):
        return None


def _stat_all():
    """(pid, ppid, uid) of every process."""
    found = []
    for name in os.listdir("/proc"):
        fields = proc_stat(name) if name.isdigit() else None
        try:
            found.append((int(name), int(fields[1]), os.stat(f"/proc/{name}").st_uid))
        except (TypeError, OSError, IndexError, ValueError):
            pass
    return found


def processes_of(uid):
    return _living([pid for pid, _, owner in _stat_all() if owner == uid])


def marked(mark):
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


def _living(pids):
    """``pids`` less the zombies, which cannot be killed, only reaped (those that are ours)."""
    zombies = [pid for pid in pids if _is_zombie(pid)]
    reap(zombies)
    return [pid for pid in pids if pid not in zombies]


def _is_zombie(pid):
    fields = proc_stat(pid)
    return bool(fields) and fields[0] == b"Z"


def reap(pids):
    for pid in pids:
        try:
            os.waitpid(pid, os.WNOHANG)
        except ChildProcessError:
            pass


def kill_group(pgid):
    try:
        os.killpg(pgid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
