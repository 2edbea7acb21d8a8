"""What a submission is, and where each of its modules comes from.

A submission is one of:

- a folder that holds ``attention_lab/`` (a copy of ``assignments/`` with edits), or that package;
- one notebook of the course: its module cells (see ``notebooks``) are the code, and the stages
  graded by default are the ones it holds code for;
- a folder holding the course's notebooks, such as nbgrader's ``submitted/<student>/<assignment>/``:
  the notebooks' module cells, and for the modules no notebook holds, the folder's ``attention_lab/``.

Notebook code wins over a module file because nbgrader's autograde runs the notebooks, whose
module cells rewrite the files, before any grade cell looks at them; reading the cells gives
``attention-lab grade`` the code nbgrader grades, without running the student's kernel.
Nothing here runs student code: notebooks are read as JSON, and modules are only copied.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from . import notebooks
from .registry import STAGES

STAGE_OF = {s.module: s.number for s in STAGES.values()}


class SubmissionError(Exception):
    """The submission cannot be graded at all (missing or malformed): a message for the user."""


@dataclass
class Submission:
    package: Path | None  # the attention_lab/ folder to copy, if there is one
    replaced: dict[str, str] = field(default_factory=dict)  # module -> code taken from a notebook
    origins: dict[str, str] = field(default_factory=dict)  # module -> where its code came from
    stages: set | None = None  # what to grade when the caller does not say (None: every stage)


def open_submission(path) -> Submission:
    path = Path(path).expanduser().resolve()
    if not path.exists():
        raise SubmissionError(f"{path}: no such file or directory")
    if path.is_file():
        if path.suffix != ".ipynb":
            raise SubmissionError(f"{path.name} is neither a folder nor a notebook; pass the folder that "
                                  "holds attention_lab/, or a notebook of the course")
        sub = _from_notebooks([path], package=None)
        sub.stages = {STAGE_OF[m] for m in sub.replaced}
        return sub
    if path.name == "attention_lab" and not (path / "attention_lab").is_dir():
        return _from_package(path)  # the package itself was named: its files, not any notebook beside it
    package = path / "attention_lab" if (path / "attention_lab").is_dir() else None
    found = sorted(path.glob("*.ipynb"))
    if found:
        sub = _from_notebooks(found, package, required=False)
        if sub.replaced:
            return sub
    if package is None:
        raise SubmissionError(f"{path} has no attention_lab/ folder and no notebook of the course; pass the "
                              "folder that holds attention_lab/ (a copy of assignments/ with your edits)")
    return _from_package(package)


def _from_package(package: Path) -> Submission:
    modules = [f"{m}.py" for m in STAGE_OF]
    if not any((package / m).is_file() for m in modules):
        raise SubmissionError(f"{package} holds none of {', '.join(modules)}")
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
            if module not in sub.origins and (package / f"{module}.py").is_file():
                sub.origins[module] = f"attention_lab/{module}.py"
    return sub
