"""What the hidden part of an nbgrader grade cell calls, in the kernel that runs the notebook.

``check(check_id)`` grades the check's whole stage once, in the isolated runner, on the
``attention_lab/`` beside the notebook (the files the notebook's module cells have written), and
returns that one check's verdict, on which the cell asserts. nbgrader scores a grade cell by its
output: an error, or anything printed to stderr, is zero; so the grading's own warnings and
messages are kept off stderr, where one would zero an honest cell.

This kernel also ran the student's code. A student can make cells here pass whatever this
module does; ``attention-lab grade`` on the submitted notebooks is the path that cannot be
gamed (see README, "nbgrader").
"""
from __future__ import annotations

import contextlib
import hashlib
import io
import warnings
from pathlib import Path

_graded: dict = {}  # (stage, code fingerprint) -> ({check id: CheckResult}, {check id: [Picture]})


def check(check_id: str, folder: str = ".") -> tuple[bool, str]:
    """``(passed, feedback)`` for one check. The grade cell asserts on it, so a failure's
    traceback is the cell's own lines and the feedback, nothing of the kit."""
    with warnings.catch_warnings(), contextlib.redirect_stderr(io.StringIO()):
        warnings.simplefilter("ignore")  # importing torch, grading: nothing may reach stderr
        from ...errors import GradingError
        from ...grading.registry import registry

        found = registry().get(check_id)
        if found is None:
            return False, f"unknown check {check_id!r}: the course was made by another version of attention-lab"
        try:
            results, pictures = _stage_results(found.stage, Path(folder))
            result = results[check_id]
        except GradingError as exc:
            return False, f"the grader itself failed, not your code: {exc}"
    from ..report import wrapped  # nbconvert's <pre> does not wrap: a long line would run past the page

    if result.passed:
        measured = result.feedback.partition("\n")[2]  # what a passing check measured, such as a speed ratio
        said = f"passed: {found.title} ({found.points} of {found.points})"
        print(wrapped(f"{said}\n{measured}" if measured else said))
    else:
        _show(pictures.get(check_id, []))
    return result.passed, wrapped(f"{found.title}: {result.feedback}")


def _show(drawn):
    """A failed check's pictures, displayed in the cell (and so in nbgrader's feedback HTML), each an
    ``<img>`` with alt text that says what it shows (``Picture._repr_mimebundle_``)."""
    if drawn:
        try:
            from IPython.display import display
        except ImportError:  # not in a notebook: the feedback text says it all
            return
        for picture in drawn:
            display(picture)


def _stage_results(stage: int, folder: Path) -> tuple:
    key = (stage, _fingerprint(folder / "attention_lab"))
    if key not in _graded:
        from ...grading.grade import grade

        graded = grade(folder / "attention_lab", stages={stage}, pictures="failed")  # the files the kernel wrote
        _graded[key] = ({r.id: r for r in graded.results}, graded.pictures_of())
    return _graded[key]


def _fingerprint(package: Path) -> str:
    """The code graded: a module cell run again after grading means grading again."""
    digest = hashlib.sha256()
    for path in sorted(package.glob("*.py")):
        digest.update(path.name.encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()
