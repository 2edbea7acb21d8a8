"""Reading what a student handed in: only regular files, each opened without following a link and
checked on what was opened, never on a name looked up before.

A submission is the student's: any name in it may be a symbolic link (git and GitHub keep them),
a FIFO that blocks whoever reads it, or a device that never ends. A check made with ``stat``
before ``open`` can be raced, and one that follows a link reads whatever the link names, as the
grader's user (root, on Gradescope). So every file is opened with ``O_NOFOLLOW | O_NONBLOCK``
relative to its folder's descriptor, itself opened the same way from the top, and ``fstat`` of the
descriptor decides: a regular file within the size limit is read with a bounded read; anything else
is left out and named. Nothing here follows a link at any depth, and nothing recurses.
"""
from __future__ import annotations

import os
import stat
from pathlib import Path

from ..errors import SubmissionError
from ..limits import MAX_SUBMISSION_BYTES, MAX_SUBMISSION_FILES

MAX_DEPTH = 16  # folders inside the package; the lab's package has none
_OPEN_FILE = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
_OPEN_DIR = _OPEN_FILE | os.O_DIRECTORY


class NotRegular(Exception):
    """The name is not a regular file that may be read: ``str()`` says what it is, in the student's terms."""


def what_it_is(mode) -> str:
    for test, words in ((stat.S_ISLNK, "a symbolic link"), (stat.S_ISDIR, "a folder"), (stat.S_ISFIFO, "a FIFO"),
                        (stat.S_ISCHR, "a device"), (stat.S_ISBLK, "a device"), (stat.S_ISSOCK, "a socket")):
        if test(mode):
            return words
    return "not a regular file"


def read_regular(path, limit, dir_fd=None) -> bytes:
    """The bytes of ``path`` (relative to ``dir_fd`` when given), if it is a regular file of at most
    ``limit`` bytes, reached without following a link at its last step; else ``NotRegular``.

    A hard link to a file that others may not read is refused too: as root, the grader could
    otherwise copy a file the student cannot read (git and zips never make hard links)."""
    try:
        fd = os.open(path, _OPEN_FILE, dir_fd=dir_fd)
    except OSError as exc:
        if os.path.islink(path) if dir_fd is None else _is_link(path, dir_fd):
            raise NotRegular("a symbolic link") from None
        raise NotRegular(f"unreadable ({exc.strerror})") from None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise NotRegular(what_it_is(info.st_mode))
        if info.st_nlink > 1 and not info.st_mode & stat.S_IROTH:
            raise NotRegular("a hard link to a file that others may not read")
        if info.st_size > limit:
            raise NotRegular(f"larger than {_size(limit)}")
        data = _read_at_most(fd, limit + 1)
        if len(data) > limit:  # it grew after fstat
            raise NotRegular(f"larger than {_size(limit)}")
        return data
    finally:
        os.close(fd)


def walk(folder: Path, left_out: dict, max_depth=MAX_DEPTH):
    """Every name below ``folder`` that is not a folder, as ``(folder descriptor, relative path,
    DirEntry)``, folders first in name order, without following a link and without recursion; names it
    will not enter (a link, a folder past ``max_depth`` or one it cannot open) go into ``left_out``
    as ``{relative path: what it is}``. ``folder`` itself must be a real folder (``SubmissionError``)."""
    try:
        top = os.open(folder, _OPEN_DIR)
    except OSError:
        kind = "a symbolic link" if os.path.islink(folder) else "not a folder that can be read"
        raise SubmissionError(f"{folder} is {kind}; hand in the folder itself",
                              f"your {Path(folder).name}/ is {kind}, which is not graded: hand in the folder itself, "
                              "with its files") from None
    stack = [(top, "", 0)]
    try:
        while stack:
            fd, rel, depth = stack.pop()
            try:
                for entry in sorted(os.scandir(fd), key=lambda e: e.name):
                    name = f"{rel}{entry.name}"
                    if entry.name in ("__pycache__", ".ipynb_checkpoints") or entry.name.startswith("."):
                        continue
                    if entry.is_symlink():
                        left_out[name] = "a symbolic link"
                    elif not entry.is_dir(follow_symlinks=False):
                        yield fd, name, entry
                    elif depth >= max_depth:
                        left_out[name] = f"deeper than {max_depth} folders"
                    else:
                        try:
                            stack.append((os.open(entry.name, _OPEN_DIR, dir_fd=fd), f"{name}/", depth + 1))
                        except OSError:
                            left_out[name] = "a folder that cannot be read"
            finally:
                os.close(fd)
    finally:
        for fd, _, _ in stack:
            os.close(fd)


def read_package(folder: Path, suffix=".py"):
    """``(files, left_out)``: the student's ``suffix`` files under ``folder`` as ``{relative path:
    bytes}``, and ``{relative path: what it is}`` for each name left out (a link, a FIFO, ...; see
    ``left_out_note``). Within the submission limits, or ``SubmissionError``. ``folder`` itself
    must be a real folder."""
    files, left_out, total = {}, {}, 0
    for fd, name, entry in walk(folder, left_out):
        if not name.endswith(suffix):
            continue
        if len(files) >= MAX_SUBMISSION_FILES:
            raise _too_big(folder)
        try:
            files[name] = read_regular(entry.name, MAX_SUBMISSION_BYTES - total, dir_fd=fd)
        except NotRegular as exc:
            if str(exc).startswith("larger than"):
                raise _too_big(folder) from None
            left_out[name] = str(exc)
            continue
        total += len(files[name])
    return files, left_out


def left_out_note(name, what) -> str:
    """What the student reads of a name ``read_package`` left out."""
    advice = "hand in the real file or folder instead" if what == "a symbolic link" else "it is not graded"
    return f"{name} is {what}, which is left out: {advice}"


def _too_big(folder):
    too_big = (f"more than {MAX_SUBMISSION_FILES} files or {MAX_SUBMISSION_BYTES // 2**20} MiB; "
               "remove data files that are not code")
    return SubmissionError(f"{folder} holds {too_big}", f"the {Path(folder).name}/ folder holds {too_big}")


def is_regular(path: Path) -> bool:
    """Is ``path`` a regular file itself (not a link to one)?"""
    try:
        return stat.S_ISREG(os.lstat(path).st_mode)
    except OSError:
        return False


def is_folder(path: Path) -> bool:
    """Is ``path`` a folder itself (not a link to one)?"""
    try:
        return stat.S_ISDIR(os.lstat(path).st_mode)
    except OSError:
        return False


def _is_link(name, dir_fd):
    try:
        return stat.S_ISLNK(os.stat(name, dir_fd=dir_fd, follow_symlinks=False).st_mode)
    except OSError:
        return False


def _read_at_most(fd, n):
    chunks, left = [], n
    while left > 0:
        chunk = os.read(fd, min(left, 1 << 20))
        if not chunk:
            break
        chunks.append(chunk)
        left -= len(chunk)
    return b"".join(chunks)


def _size(n):
    return f"{n // 2**20} MiB" if n >= 2**20 else f"{n} bytes"
