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

import os
import shutil
import stat
import tempfile
import zipfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

from ..curriculum import STAGE_OF
from ..errors import SubmissionError
from ..common.limits import MAX_SUBMISSION_BYTES, MAX_SUBMISSION_FILES
from . import notebooks
from .files import is_folder, is_regular, left_out_note, read_package

MODULE_FILES = [f"{m}.py" for m in STAGE_OF]
IGNORED = ("__MACOSX", "__pycache__", ".ipynb_checkpoints")  # what archivers and Jupyter add
ZIP_MAX_DEPTH = 16  # folders a zip member may lie in; a submission has two or three
GIVEN_ORIGIN = "the kit's own (given in this course)"
HAND_IN = ("Hand in your attention_lab/ folder, or the module files in it that you edited (simple.py, "
           "self_attention.py, causal.py, ...), or the course's notebooks (.ipynb).")


def holds_modules(folder: Path) -> bool:
    """Does ``folder`` hold a module file of the lab (``simple.py``, ...) itself? A link to one
    counts, so that the student is told it was left out rather than that nothing was handed in."""
    return any(is_regular(folder / m) or (folder / m).is_symlink() for m in MODULE_FILES)


def holds_code(folder: Path) -> bool:
    """Is ``folder`` a submission's code: the folder that holds ``attention_lab/``, or the module files?"""
    return _package_in(folder) is not None or holds_modules(folder)


def _package_in(folder: Path) -> Path | None:
    """``folder/attention_lab`` when it is there, as a folder or a link (which reading refuses, and says so)."""
    package = folder / "attention_lab"
    return package if is_folder(package) or package.is_symlink() else None


@dataclass
class Submission:
    package: Path | None  # the attention_lab/ folder it came from, if there is one
    files: dict[str, bytes] = field(default_factory=dict)  # the package's .py files, read once (see ``files``)
    left_out: dict[str, str] = field(default_factory=dict)  # module -> why its file was not read (a link, ...)
    replaced: dict[str, str] = field(default_factory=dict)  # module -> code taken from a notebook
    origins: dict[str, str] = field(default_factory=dict)  # module -> where its code came from
    stages: set[int] | None = None  # what to grade when the caller does not say (None: every stage)
    notes: list[str] = field(default_factory=list)  # what the student should know about what was graded

    def give(self, modules: dict[str, str]) -> None:
        """Grade ``modules`` (module -> the kit's code) whatever the student handed in for them: the course
        gives their stages, so the stages that import them are graded with the kit's own, and the student told."""
        for module, code in modules.items():
            self.replaced[module] = code
            self.origins[module] = GIVEN_ORIGIN
            self.left_out.pop(module, None)
            self.notes = [n for n in self.notes if not n.startswith(f"attention_lab/{module}.py ")]
            self.notes.append(f"attention_lab/{module}.py is given in this course: stage {STAGE_OF[module]} is not "
                              f"taught, and the stages that import it were graded with the kit's own {module}.py, "
                              "whatever your copy holds.")

    def package_files(self) -> dict[str, bytes]:
        """Relative path -> bytes: the package as the child imports it, file for file: an empty
        ``__init__.py`` unless one was handed in, every ``.py`` file read (helper modules and
        sub-packages too: ``_impl.py``, ``sub/helpers.py``), and over the module files the code taken
        from notebooks, or the kit's own for a given module. The sandbox's workspace writes the same
        set (``_write_package``; tests/test_review.py holds the two together)."""
        return {"__init__.py": b"", **self.files, **{f"{m}.py": c.encode() for m, c in self.replaced.items()}}

    def code(self) -> dict[str, str]:
        """module -> the code that is graded for it (a notebook's cell, or the module file)."""
        found: dict[str, str] = {}
        for module in STAGE_OF:
            if module in self.replaced:
                found[module] = self.replaced[module]
            elif f"{module}.py" in self.files:
                found[module] = self.files[f"{module}.py"].decode("utf-8", errors="replace")
        return found


@contextmanager
def opened(path: str | os.PathLike[str] | Submission) -> Iterator[Submission]:
    """``open_submission``, for a zip as well: it is unpacked into a temporary folder that lasts
    as long as the ``with`` block (the runner copies what it grades before the block ends). A
    ``Submission`` already read (``read``, on another machine) is itself."""
    if isinstance(path, Submission):
        yield path
        return
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


def read(path: str | os.PathLike[str]) -> Submission:
    """What intake reads of ``path``, held in memory: the bytes of every file the child may import, and
    what the student is told of the rest. A worker of a cluster grades it without the driver's disk."""
    with opened(path) as sub:
        return sub


def open_submission(path: str | os.PathLike[str]) -> Submission:
    path = Path(path).expanduser().resolve()
    if not path.exists():
        raise SubmissionError(f"{path}: no such file or directory", f"nothing was handed in. {HAND_IN}")
    if not path.is_dir():  # a file, or a FIFO or device that intake refuses without reading it
        if path.suffix != ".ipynb":
            raise SubmissionError(f"{path.name} is neither a folder, a zip nor a notebook; pass the folder that "
                                  "holds attention_lab/, or a notebook of the course",
                                  f"{path.name} is neither a folder, a zip nor a notebook of the course. {HAND_IN}")
        sub = _from_notebooks([path], package=None)
        sub.stages = {STAGE_OF[m] for m in sub.replaced}
        return sub
    path = _descend(path)
    if path.name == "attention_lab" and _package_in(path) is None:
        return _from_package(path)  # the package itself was named: its files, not any notebook beside it
    package = _package_in(path)
    found = sorted(path.glob("*.ipynb"))
    refused: list[str] = []  # notebooks that are not readable ones: said, never a reason to stop
    if found:
        sub = _from_notebooks(found, package, required=False, refused=refused)
        if sub.replaced:
            return sub
    if package is None and not holds_modules(path):
        why = "".join(f" {r}." for r in refused)
        students = _submissions_in(path)
        if students:  # an instructor's folder of a class: the command for it is grade-all
            raise SubmissionError(f"{path} holds {students} folders that each hold a submission, as a class does: "
                                  f"grade the class with `attention-lab grade-all {path} --out grades.csv`, or one "
                                  f"student with `attention-lab grade {path}/NAME`")
        raise SubmissionError(f"{path} has no attention_lab/ folder and no notebook of the course;{why} pass the "
                              "folder that holds attention_lab/ (a copy of assignments/ with your edits)",
                              f"no attention_lab/ folder, module file or notebook of the course was handed in.{why} "
                              f"{HAND_IN}")
    sub = _from_package(path if package is None else package)  # the module files themselves, or the package
    sub.notes += [f"{r}; it was not read" for r in refused]
    return sub


def _submissions_in(folder: Path, most: int = 1000) -> int:
    """How many of ``folder``'s first ``most`` entries are folders that hold a submission (or hold one
    further down, as nbgrader's ``submitted/<student>/<assignment>/`` does): 2 or more is a class."""
    found = 0
    for entry in sorted(folder.iterdir())[:most]:
        if is_folder(entry) and (holds_code(_descend(entry)) or any(_descend(entry).glob("*.ipynb"))):
            found += 1
    return found if found >= 2 else 0


def _descend(folder: Path, depth: int = 4) -> Path:
    """Through folders that hold nothing but one folder, to where the work is."""
    for _ in range(depth):
        if holds_code(folder) or any(folder.glob("*.ipynb")):
            return folder
        inside = [p for p in folder.iterdir() if not p.name.startswith(".") and p.name not in IGNORED]
        if len(inside) != 1 or not is_folder(inside[0]):
            return folder
        folder = inside[0]
    return folder


def unzip(archive: Path, dest: Path) -> None:
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
                shown = ascii(info.filename[:80]) + ("..." if len(info.filename) > 80 else "")
                if name.startswith("/") or ".." in parts or ":" in parts[0]:
                    raise SubmissionError(f"{archive.name} holds {shown}, a path outside the archive")
                if len(parts) > ZIP_MAX_DEPTH or max(len(p.encode("utf-8", "surrogateescape")) for p in parts) > 255:
                    raise SubmissionError(f"{archive.name} holds {shown}, a name deeper than {ZIP_MAX_DEPTH} folders "
                                          "or with a part longer than 255 bytes, which no submission needs")
                files, total = files + 1, total + info.file_size
                if files > MAX_SUBMISSION_FILES or total > MAX_SUBMISSION_BYTES:
                    raise SubmissionError(f"{archive.name} holds more than {MAX_SUBMISSION_FILES} files or "
                                          f"{MAX_SUBMISSION_BYTES // 2**20} MiB; remove data files that are not code")
                target = dest.joinpath(*parts)
                try:
                    target.parent.mkdir(parents=True, exist_ok=True)
                    with z.open(info) as src, open(target, "wb") as out:
                        out.write(src.read(info.file_size + 1)[:info.file_size])  # never more than it declared
                except OSError as exc:  # a file where a folder must go, a path too long for this system
                    raise SubmissionError(f"{archive.name} holds {shown}, which cannot be unpacked: "
                                          f"{exc.strerror.lower() if exc.strerror else exc}") from None
    except (zipfile.BadZipFile, zipfile.LargeZipFile, RuntimeError, NotImplementedError, EOFError,
            UnicodeDecodeError) as exc:
        raise SubmissionError(f"{archive.name} cannot be unpacked: {exc}") from None


def _from_package(package: Path) -> Submission:
    files, left_out = read_package(package)
    notes = [left_out_note(f"attention_lab/{name}", what) for name, what in left_out.items()]
    if not any(m in files for m in MODULE_FILES):
        raise SubmissionError(f"{package} holds none of {', '.join(MODULE_FILES)}" + "".join(f"; {n}" for n in notes),
                              f"the attention_lab/ folder handed in holds none of {', '.join(MODULE_FILES)}"
                              + "".join(f"; {n}" for n in notes) + f". {HAND_IN}")
    return Submission(package, files, _modules_left_out(left_out),
                      origins={m: f"attention_lab/{m}.py" for m in STAGE_OF if f"{m}.py" in files}, notes=notes)


def _from_notebooks(paths: list[Path], package: Path | None, required: bool = True,
                    refused: list[str] | None = None) -> Submission:
    files: dict[str, bytes] = {}
    left_out: dict[str, str] = {}
    if package is not None and is_folder(package):
        files, left_out = read_package(package)
    elif package is not None:  # a link: the notebooks are graded, and the student told why the folder is not
        left_out = {"": "a symbolic link"}
    notes = [left_out_note(f"attention_lab/{name}", what) for name, what in left_out.items()]
    sub = Submission(package, files, _modules_left_out(left_out), notes=notes)
    for path in paths:  # sorted: the order nbgrader runs them in, so a later notebook wins
        try:
            found = notebooks.modules_in(path)
        except notebooks.NotebookError as exc:
            if required:
                raise SubmissionError(str(exc)) from None
            if refused is not None:
                refused.append(str(exc))
            continue  # a stray notebook beside the course's does not stop grading
        for module, code in found.items():
            sub.replaced[module] = code
            sub.origins[module] = path.name
    sub.notes += [f"{r}; it was not read" for r in refused or []]
    if required and not sub.replaced:
        raise SubmissionError(f"{paths[0].name} has no cell that saves a module of the lab (a cell that "
                              "starts with %%writefile attention_lab/<module>.py)")
    if package is not None:
        for module in STAGE_OF:
            file = files.get(f"{module}.py")
            if module not in sub.origins and file is not None:
                sub.origins[module] = f"attention_lab/{module}.py"
            elif module in sub.replaced and file is not None and _differs(file, sub.replaced[module]):
                sub.notes.append(
                    f"attention_lab/{module}.py differs from the module cell of {sub.origins[module]}: the notebook's "
                    f"cell was graded, because running the notebook (as nbgrader does) rewrites the file with it. "
                    f"If your work is in the file, copy it into that cell.")
    return sub


def _modules_left_out(left_out: dict[str, str]) -> dict[str, str]:
    """module -> what its file is, for the module files among what ``read_package`` left out."""
    return {m: left_out_note(f"attention_lab/{m}.py", left_out[f"{m}.py"]) for m in STAGE_OF if f"{m}.py" in left_out}


def _differs(file: bytes, code: str) -> bool:
    """Does the module file hold other code than a notebook's cell (trailing blanks aside)?"""
    return file.decode("utf-8", errors="replace").rstrip() != code.rstrip()
