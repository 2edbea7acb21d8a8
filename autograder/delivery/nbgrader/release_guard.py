"""Keeps solutions out of a release: a hook of ``nbgrader generate_assignment``, named in the
course's config.

nbgrader strips solutions from notebooks only; every other file of the source folder reaches
the release as it is. The guard refuses to release when such a file holds a solution or
hidden-test region, which is what running a source notebook leaves behind: its module cell writes
the full solution into ``attention_lab/``. It runs before nbgrader writes anything, and says why in
one paragraph (an exception would bury it in nbgrader's traceback).
"""
import sys
from pathlib import Path

from ...common.markers import BEGIN, HIDDEN_BEGIN


def found_solutions(folder: Path) -> list[str]:
    """Where a file of ``folder`` other than a notebook holds a solution or hidden-test marker."""
    found = []
    for path in sorted(folder.rglob("*")):
        if path.suffix == ".ipynb" or not path.is_file() or ".ipynb_checkpoints" in path.parts:
            continue
        text = path.read_text(errors="replace")
        for marker in (BEGIN, HIDDEN_BEGIN):
            if marker in text:
                found.append(f"{path.relative_to(folder)} line {text[: text.index(marker)].count(chr(10)) + 1}")
                break
    return found


def refusal(found) -> str:
    return (f"attention-lab: nothing was released. {found[0]} holds a solution region"
            + (f" (and {len(found) - 1} more file(s))" if len(found) > 1 else "")
            + ", which would reach students as it is: running a source notebook writes its solution there. "
            "Restore the stubs with `attention-lab nbgrader init COURSE_DIR` (it restores modules that hold "
            "solution code and keeps your settings and edits), then generate the assignment again.")


def refuse_solutions(assignment, student, notebooks):
    """``GenerateAssignment.pre_convert_hook``: stop the release, before anything is written, when
    the source folder holds solutions outside its notebooks."""
    if not notebooks:
        return
    found = found_solutions(Path(notebooks[0]).parent)
    if found:
        print(refusal(found), file=sys.stderr)
        raise SystemExit(1)  # not an Exception: nbgrader would log it as "hook failed" and go on


try:  # the preprocessor of courses made before the hook; it needs nbgrader, which a kernel may lack
    from nbgrader.preprocessors import NbGraderPreprocessor
except ImportError:  # pragma: no cover
    NbGraderPreprocessor = object


class ReleaseGuard(NbGraderPreprocessor):
    """The same refusal as a preprocessor (``nbgrader_config.py`` of courses made by earlier kits)."""

    def preprocess(self, nb, resources):
        found = found_solutions(Path(resources["metadata"]["path"]))
        if found:
            raise ValueError(refusal(found))
        return nb, resources
