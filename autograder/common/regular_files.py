"""Reading a file someone else controls: only a regular file, opened without following a link and
checked on what was opened, never on a name looked up before.

Both ends of grading read such files: intake reads what a student handed in, and the grading process
reads what its child wrote (in a folder graded code may write). Any name there may be a symbolic link
(git and GitHub keep them), a FIFO that blocks whoever reads it, or a device that never ends. A check
made with ``stat`` before ``open`` can be raced, and one that follows a link reads whatever the link
names, as the grader's user (root, on Gradescope). So the file is opened with ``O_NOFOLLOW |
O_NONBLOCK`` (relative to a folder's descriptor where one is given), and ``fstat`` of the descriptor
decides: a regular file within the size limit is read with a bounded read; anything else is refused,
and named.
"""
from __future__ import annotations

import os
import stat

OPEN_FILE = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC


class NotRegular(Exception):
    """The name is not a regular file that may be read: ``str()`` says what it is, in the student's terms."""


class TooLarge(NotRegular):
    """A regular file, larger than the limit."""


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
        fd = os.open(path, OPEN_FILE, dir_fd=dir_fd)
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
            raise TooLarge(f"larger than {_size(limit)}")
        data = _read_at_most(fd, limit + 1)
        if len(data) > limit:  # it grew after fstat
            raise TooLarge(f"larger than {_size(limit)}")
        return data
    finally:
        os.close(fd)


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
