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
"""
from __future__ import annotations

import os
import shutil
import site
import stat
import sys
import tempfile
from functools import lru_cache
from pathlib import Path

from ..paths import KIT_PACKAGE, KIT_ROOT
from ..regular_files import NotRegular, read_regular
from . import protocol

CHILD_UID = 65500  # no login, no files; 65000-65533 is never handed out to users
RESULT_MAX_BYTES = 8 * 2**20  # no probe result comes near this


def is_root():
    return os.geteuid() == 0


def secrets():
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


def lock_secrets():
    """As root, where no child can have a root of its own, make the secrets unreadable to
    ``CHILD_UID`` on disk if they are not already (0700): the fallback, said once per folder."""
    for path in secrets():
        if _others_can_reach(path):
            os.chmod(path, 0o700)
            print(f"attention-lab: made {path} readable by root only, so graded code cannot read it (this machine "
                  "gives the grader no mount namespace to hide it in)", file=sys.stderr)


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
        self.own_root = "namespaces" in protocol.KERNEL_LAYERS and children_own_root()
        if self.uid is not None and not self.own_root:
            lock_secrets()
        self.root = Path(tempfile.mkdtemp(prefix="attention-lab-")).resolve()
        self.control = self.root / "control"  # job files and stderr: the child cannot touch them
        self.control.mkdir()
        self.submission = self.root / "submission"
        try:
            package = self.submission / "attention_lab"
            _write_package(submission.files, submission.replaced, package)
            # Module files intake left out (a link, a FIFO), and no notebook replaced: every check of them says why.
            self.left_out = {m: why for m, why in submission.left_out.items() if m not in submission.replaced}
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


def _write_package(files: dict, replaced: dict, package: Path):
    """Write the package as intake read it (``files``: relative path -> bytes, read from regular
    files only, never through a link), then the code taken from notebooks over its modules. Nothing
    of the student's is opened here: the bytes were read once, so what is graded is what was checked.
    The child, another user as root, may read the package and write nothing into it."""
    package.mkdir(parents=True)
    for rel, data in {"__init__.py": b"", **files, **{f"{m}.py": c.encode() for m, c in replaced.items()}}.items():
        target = package / rel
        target.parent.mkdir(parents=True, exist_ok=True, mode=0o755)
        target.write_bytes(data)
        target.chmod(0o644)
    for folder in (package.parent, package):
        folder.chmod(0o755)


def read_small(path, limit=RESULT_MAX_BYTES):
    """Bytes of a file the child wrote, or None: never follows a link, never blocks on a FIFO,
    never reads more than ``limit`` (``regular_files.read_regular``, as intake reads a student's files)."""
    try:
        return read_regular(path, limit)
    except NotRegular:
        return None


def site_paths():
    """The interpreter's import path less the kit and the working folder: what the child may use."""
    roots = tuple({sys.prefix, sys.base_prefix, sys.exec_prefix, sys.base_exec_prefix})
    user = site.getusersitepackages() if site.ENABLE_USER_SITE else None
    return [p for p in dict.fromkeys(sys.path)
            if p and (p.startswith(roots) or p == user) and Path(p).resolve() != KIT_ROOT]
