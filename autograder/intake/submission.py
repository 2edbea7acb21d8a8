"""What a submission is, and where each of its modules comes from.

A submission is one of:

- a folder that holds ``attention_lab/`` (a copy of ``assignments/`` with edits), or that package,
  or the module files themselves (``simple.py``, ``causal.py``, ... as uploaded to Gradescope);
- one notebook of the course: its module cells (see ``notebooks``) are the code, and the stages
  graded by default are the ones it holds code for;
- a folder holding the course's notebooks, such as nbgrader's ``submitted/<student>/<assignment>/``:
  the notebooks' module cells, and for the modules no notebook holds, the folder's ``attention_lab/``;
- a folder that holds nothing of these but one folder: that folder, and so on down (nbgrader's
  ``submitted/<student>/<assignment>/``, a zip's top folder);
- a zip of any of these (``opened`` unpacks it, safely, for as long as it is graded).

Notebook code wins over a module file because nbgrader's autograde runs the notebooks, whose
module cells rewrite the files, before any grade cell looks at them; reading the cells gives
``attention-lab grade`` the code nbgrader grades, without running the student's kernel.
Nothing here runs student code: notebooks are read as JSON, and modules are only copied.
"""
from __future__ import annotations

import shutil
import stat
import tempfile
import zipfile
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

from ..curriculum import STAGE_OF
from ..errors import SubmissionError
from ..limits import MAX_SUBMISSION_BYTES, MAX_SUBMISSION_FILES
from . import notebooks

MODULE_FILES = [f"{m}.py" for m in STAGE_OF]
IGNORED = ("__MACOSX", "__pycache__", ".ipynb_checkpoints")  # what archivers and Jupyter add
HAND_IN = ("Hand in your attention_lab/ folder, or the module files in it that you edited (simple.py, "
           "self_attention.py, causal.py, ...), or the course's notebooks (.ipynb).")


def holds_modules(folder: Path) -> bool:
    """Does ``folder`` hold a module file of the lab (``simple.py``, ...) itself?"""
    return any((folder / m).is_file() for m in MODULE_FILES)


def holds_code(folder: Path) -> bool:
    """Is ``folder`` a submission's code: the folder that holds ``attention_lab/``, or the module files?"""
    return (folder / "attention_lab").is_dir() or holds_modules(folder)


@dataclass
class Submission:
    package: Path | None  # the attention_lab/ folder to copy, if there is one
    replaced: dict[str, str] = field(default_factory=dict)  # module -> code taken from a notebook
    origins: dict[str, str] = field(default_factory=dict)  # module -> where its code came from
    stages: set | None = None  # what to grade when the caller does not say (None: every stage)
    notes: list[str] = field(default_factory=list)  # what the student should know about what was graded

    def code(self) -> dict[str, str]:
        """module -> the code that is graded for it (a notebook's cell, or the module file)."""
        found = {}
        for module in STAGE_OF:
            file = self.package / f"{module}.py" if self.package is not None else None
            if module in self.replaced:
                found[module] = self.replaced[module]
            elif file is not None and file.is_file():
                found[module] = file.read_text(encoding="utf-8", errors="replace")
        return found


@contextmanager
def opened(path):
    """``open_submission``, for a zip as well: it is unpacked into a temporary folder that lasts
    as long as the ``with`` block (the runner copies what it grades before the block ends)."""
    path = Path(path).expanduser().resolve()
    if path.is_file() and path.suffix.lower() == ".zip":
        folder = Path(tempfile.mkdtemp(prefix="attention-lab-zip-"))
        try:
            unzip(path, folder)
            yield open_submission(folder)
        finally:
            shutil.rmtree(folder, ignore_errors=True)
    else:
        yield open_submission(path)


def open_submission(path) -> Submission:
    path = Path(path).expanduser().resolve()
    if not path.exists():
        raise SubmissionError(f"{path}: no such file or directory", f"nothing was handed in. {HAND_IN}")
    if path.is_file():
        if path.suffix != ".ipynb":
            raise SubmissionError(f"{path.name} is neither a folder, a zip nor a notebook; pass the folder that "
                                  "holds attention_lab/, or a notebook of the course",
                                  f"{path.name} is neither a folder, a zip nor a notebook of the course. {HAND_IN}")
        sub = _from_notebooks([path], package=None)
        sub.stages = {STAGE_OF[m] for m in sub.replaced}
        return sub
    path = _descend(path)
    if path.name == "attention_lab" and not (path / "attention_lab").is_dir():
        return _from_package(path)  # the package itself was named: its files, not any notebook beside it
    package = path / "attention_lab" if (path / "attention_lab").is_dir() else None
    found = sorted(path.glob("*.ipynb"))
    if found:
        sub = _from_notebooks(found, package, required=False)
        if sub.replaced:
            return sub
    if package is None and holds_modules(path):
        return _from_package(path)  # the module files themselves
    if package is None:
        raise SubmissionError(f"{path} has no attention_lab/ folder and no notebook of the course; pass the "
                              "folder that holds attention_lab/ (a copy of assignments/ with your edits)",
                              f"no attention_lab/ folder, module file or notebook of the course was handed in. {HAND_IN}")
    return _from_package(package)


def _descend(folder: Path, depth=4) -> Path:
    """Through folders that hold nothing but one folder, to where the work is."""
    for _ in range(depth):
        if holds_code(folder) or any(folder.glob("*.ipynb")):
            return folder
        inside = [p for p in folder.iterdir() if not p.name.startswith(".") and p.name not in IGNORED]
        if len(inside) != 1 or not inside[0].is_dir() or inside[0].is_symlink():
            return folder
        folder = inside[0]
    return folder


def unzip(archive: Path, dest: Path):
    """Unpack ``archive`` into ``dest``: regular files only (no links, which could point at the
    grader's files), no name that leaves ``dest``, and no more than the runner would copy."""
    total = files = 0
    try:
        with zipfile.ZipFile(archive) as z:
            for info in z.infolist():
                name = info.filename.replace("\\", "/")
                parts = PurePosixPath(name).parts
                if info.is_dir() or not parts or parts[0] in IGNORED or stat.S_ISLNK(info.external_attr >> 16):
                    continue
                if name.startswith("/") or ".." in parts or ":" in parts[0]:
                    raise SubmissionError(f"{archive.name} holds {info.filename!r}, a path outside the archive")
                files, total = files + 1, total + info.file_size
                if files > MAX_SUBMISSION_FILES or total > MAX_SUBMISSION_BYTES:
                    raise SubmissionError(f"{archive.name} holds more than {MAX_SUBMISSION_FILES} files or "
                                          f"{MAX_SUBMISSION_BYTES // 2**20} MiB; remove data files that are not code")
                target = dest.joinpath(*parts)
                target.parent.mkdir(parents=True, exist_ok=True)
                with z.open(info) as src, open(target, "wb") as out:
                    out.write(src.read(info.file_size + 1)[:info.file_size])  # never more than it declared
    except (zipfile.BadZipFile, zipfile.LargeZipFile, RuntimeError, NotImplementedError, EOFError) as exc:
        raise SubmissionError(f"{archive.name} cannot be unpacked: {exc}") from None


def _from_package(package: Path) -> Submission:
    if not holds_modules(package):
        raise SubmissionError(f"{package} holds none of {', '.join(MODULE_FILES)}",
                              f"the attention_lab/ folder handed in holds none of {', '.join(MODULE_FILES)}. {HAND_IN}")
    return Submission(package, origins={m: f"attention_lab/{m}.py" for m in STAGE_OF
                                        if (package / f"{m}.py").is_file()})


def _from_notebooks(paths, package, required=True) -> Submission:
    sub = Submission(package)
    for path in paths:  # sorted: the order nbgrader runs them in, so a later notebook wins
        try:
            found = notebooks.modules_in(path)
        except notebooks.NotebookError as exc:
            if required:
                raise SubmissionError(str(exc)) from None
            continue  # a stray notebook beside the course's does not stop grading
        for module, code in found.items():
            sub.replaced[module] = code
            sub.origins[module] = path.name
    if required and not sub.replaced:
        raise SubmissionError(f"{paths[0].name} has no cell that saves a module of the lab (a cell that "
                              "starts with %%writefile attention_lab/<module>.py)")
    if package is not None:
        for module in STAGE_OF:
            file = package / f"{module}.py"
            if module not in sub.origins and file.is_file():
                sub.origins[module] = f"attention_lab/{module}.py"
            elif module in sub.replaced and file.is_file() and _differs(file, sub.replaced[module]):
                sub.notes.append(
                    f"attention_lab/{module}.py differs from the module cell of {sub.origins[module]}: the notebook's "
                    f"cell was graded, because running the notebook (as nbgrader does) rewrites the file with it. "
                    f"If your work is in the file, copy it into that cell.")
    return sub


def _differs(file: Path, code: str) -> bool:
    """Does the module file hold other code than a notebook's cell (trailing blanks aside)?"""
    try:
        text = file.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return False
    return text.rstrip() != code.rstrip()
