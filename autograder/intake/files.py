"""Reading what a student handed in: only regular files (``regular_files.read_regular``), in folders
walked without following a link and without recursion.

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
from collections.abc import Iterator
from pathlib import Path

from ..errors import SubmissionError
from ..common.limits import MAX_SUBMISSION_BYTES, MAX_SUBMISSION_FILES
from ..common.regular_files import OPEN_FILE, NotRegular, TooLarge, read_regular

MAX_DEPTH = 16  # folders inside the package; the lab's package has none
_OPEN_DIR = OPEN_FILE | os.O_DIRECTORY


def walk(folder: Path, left_out: dict[str, str],
         max_depth: int = MAX_DEPTH) -> Iterator[tuple[int, str, os.DirEntry[str]]]:
    """Every name below ``folder`` that is not a folder, as ``(folder descriptor, relative path,
    DirEntry)``: a folder's own names in name order, its folders after, without following a link and
    without recursion; names it
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


def read_package(folder: Path, suffix: str = ".py") -> tuple[dict[str, bytes], dict[str, str]]:
    """``(files, left_out)``: the student's ``suffix`` files under ``folder`` as ``{relative path:
    bytes}``, and ``{relative path: what it is}`` for each name left out (a link, a FIFO, ...; see
    ``left_out_note``). Within the submission limits, or ``SubmissionError``. ``folder`` itself
    must be a real folder."""
    files: dict[str, bytes] = {}
    left_out: dict[str, str] = {}
    total = 0
    for fd, name, entry in walk(folder, left_out):
        if not name.endswith(suffix):
            continue
        if len(files) >= MAX_SUBMISSION_FILES:
            raise _too_big(folder)
        try:
            files[name] = read_regular(entry.name, MAX_SUBMISSION_BYTES - total, dir_fd=fd)
        except TooLarge:
            raise _too_big(folder) from None
        except NotRegular as exc:
            left_out[name] = str(exc)
            continue
        total += len(files[name])
    return files, left_out


def left_out_note(name: str, what: str) -> str:
    """What the student reads of a name ``read_package`` left out."""
    advice = "hand in the real file or folder instead" if what == "a symbolic link" else "it is not graded"
    return f"{name} is {what}, which is left out: {advice}"


def _too_big(folder: Path) -> SubmissionError:
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
