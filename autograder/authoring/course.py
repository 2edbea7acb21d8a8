"""An nbgrader course generated from ``solutions/`` and the check registry.

``attention-lab nbgrader init COURSE_DIR`` writes::

    nbgrader_config.py
    source/<assignment>/stage1_simple.ipynb ... (a notebook per stage of ``curriculum``)
    source/<assignment>/attention_lab/*.py      the stubs (nbgrader copies modules untouched)
    source/<assignment>/tests/                  the public self-checks

One assignment with a notebook per stage, not an assignment per stage: the stages build on one
another (stage 4's wrapper is made of stage 3's ``CausalAttention``), so a student works in one
``attention_lab`` package from the first notebook to the last, and nbgrader still keeps a score
per notebook, that is per stage.

Each notebook explains its stage (the module's docstring), holds the module in one solution
cell (see ``notebooks``), a self-check cell that runs the public checks, and one grade cell per
registered check with that check's points. A grade cell's hidden part only names the check; the
check itself runs in the isolated runner (``gradecell.check``), so nothing in a notebook,
released or autograded, holds an expected value.
"""
from __future__ import annotations

import ast
import json
import re
import shutil
from pathlib import Path

from ..curriculum import STAGES
from ..errors import BuildError
from ..grading.grade import plan
from ..grading.registry import all_checks
from ..intake import notebooks
from ..markers import HIDDEN_BEGIN, HIDDEN_END, solved
from ..paths import KIT_ROOT
from ..sandbox.runner import worst_case_s
from .build import planned_files

DEFAULT_ASSIGNMENT = "attention"
SCHEMA_VERSION = 3  # nbgrader's cell metadata format (0.9.x)
KERNEL = {"kernelspec": {"display_name": "Python 3 (ipykernel)", "language": "python", "name": "python3"},
          "language_info": {"name": "python"}}


def notebook_name(stage) -> str:
    return f"stage{stage.number}_{stage.module}"


def planned_course(assignment: str = DEFAULT_ASSIGNMENT, root: Path = KIT_ROOT) -> dict[str, bytes]:
    """Every file of the course, relative path -> content."""
    if not re.fullmatch(r"[A-Za-z0-9_-]+", assignment):
        raise BuildError(f"assignment name {assignment!r}: use letters, digits, '-' and '_' only")
    source = f"source/{assignment}"
    files = {"nbgrader_config.py": nbgrader_config(assignment).encode()}
    stubs = {p.name: c for p, c in planned_files(root).items() if p.parent.name == "attention_lab"}
    for name, content in sorted(stubs.items()):
        files[f"{source}/attention_lab/{name}"] = content
    for path in sorted((root / "assignments" / "tests").glob("*.py")):
        files[f"{source}/tests/{path.name}"] = path.read_bytes()
    for stage in STAGES.values():
        solution = (root / "solutions" / "attention_lab" / f"{stage.module}.py").read_text()
        text = json.dumps(stage_notebook(stage, solution), indent=1, ensure_ascii=False) + "\n"
        files[f"{source}/{notebook_name(stage)}.ipynb"] = text.encode()
    return files


def init_course(course_dir, assignment=DEFAULT_ASSIGNMENT, force=False, log=print):
    """Write the course into ``course_dir``. Without ``force`` nothing is written when any file
    would change, so an instructor's edited config or source is never lost by accident."""
    course = Path(course_dir)
    files = planned_course(assignment)
    differ = [rel for rel, content in files.items()
              if (course / rel).exists() and (course / rel).read_bytes() != content]
    if differ and not force:
        raise BuildError(f"{len(differ)} file(s) in {course} differ from what would be written, e.g. "
                         f"{differ[0]}; nothing was written. Use --force to overwrite them")
    for rel, content in files.items():
        path = course / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        if not path.exists() or path.read_bytes() != content:
            path.write_bytes(content)
            log(f"wrote {path}")
    return course


def reference_code(root: Path = KIT_ROOT) -> dict[str, str]:
    """module -> the reference as a student who solved the stage hands it in."""
    return {s.module: solved((root / "solutions" / "attention_lab" / f"{s.module}.py").read_text())
            for s in STAGES.values()}


def hand_in(release: Path, folder: Path, modules: dict[str, str]) -> Path:
    """A submission as a student makes one, for tests and benchmarks: a copy of the release with
    ``modules`` typed into their module cells and saved in attention_lab/ (what running them does)."""
    shutil.copytree(release, folder)
    for path in folder.glob("*.ipynb"):
        path.write_text(json.dumps(notebooks.fill(json.loads(path.read_text()), modules), indent=1))
    for module, code in modules.items():
        (folder / "attention_lab" / f"{module}.py").write_text(code)
    return folder


def nbgrader_config(assignment: str) -> str:
    modules = sorted(f"attention_lab/{p}" for p in ["__init__.py", *(f"{s.module}.py" for s in STAGES.values())])
    timeout = max(worst_case_s(plan(all_checks({n}), {"cpu", "meta", "cuda"})) for n in STAGES)
    return f'''\
# Written by `attention-lab nbgrader init`; `init --force` writes it again. Add your own
# settings at the end, and change the ones of attention-lab only knowing why they are there.
c = get_config()  # noqa: F821
c.CourseDirectory.course_id = "attention-lab"

# A hidden grade cell runs its stage in attention-lab's isolated runner, whose own watchdog
# bounds it (this is that bound); nbgrader's default of 30 s per cell would cut a slow but
# honest stage short, and a cut-short cell scores zero.
c.Execute.timeout = {int(timeout) + 1}

# The students' modules are their work. At autograde nbgrader replaces every file that is not a
# notebook with the source's copy (here: the stubs) unless it is listed here.
c.Autograde.exclude_overwriting = {{{assignment!r}: {modules!r}}}

# nbgrader copies modules into the release untouched: refuse to release one that holds solution
# code or hidden tests (running a source notebook writes its solution into source/.../attention_lab/).
from nbgrader.converters import GenerateAssignment  # noqa: E402
c.GenerateAssignment.preprocessors = [
    "autograder.release_guard.ReleaseGuard",
    *GenerateAssignment.class_traits()["preprocessors"].default(),
]
# --- your settings below ---
'''


def stage_notebook(stage, solution: str) -> dict:
    checks = all_checks({stage.number})
    points = sum(c.points for c in checks)
    cells = [
        _markdown(f"{stage.module}-intro", _intro(stage, solution, points, len(checks))),
        _code(f"{stage.module}-code", notebooks.module_cell(stage.module, solution), solution=True),
        _markdown(f"{stage.module}-selfcheck-intro", SELF_CHECK_TEXT),
        _code(f"{stage.module}-selfcheck", SELF_CHECK.format(n=stage.number)),
        _markdown(f"{stage.module}-graded-intro", GRADED_TEXT.format(points=points, n=len(checks))),
    ]
    cells += [_code(c.id.replace(".", "-"), _grade_cell(c, stage.module), grade=True, points=c.points)
              for c in checks]
    return {"cells": cells, "metadata": KERNEL, "nbformat": 4, "nbformat_minor": 5}


def _intro(stage, solution, points, n_checks):
    doc = ast.get_docstring(ast.parse(solution)) or ""
    body = re.sub(r"``([^`]+)``", r"`\1`", doc.partition("\n")[2].strip())  # reST literals -> Markdown
    return INTRO.format(n=stage.number, title=stage.title, body=body, module=stage.module, points=points,
                        checks=n_checks)


def _cell(cell_type, grade_id, source, nbgrader):
    cell = {"cell_type": cell_type, "id": grade_id, "metadata": {"nbgrader": {
        "grade": False, "grade_id": grade_id, "locked": True, "schema_version": SCHEMA_VERSION,
        "solution": False, "task": False, **nbgrader}}, "source": source}
    if cell_type == "code":
        cell.update(execution_count=None, outputs=[])
    return cell


def _markdown(grade_id, text):
    return _cell("markdown", grade_id, text, {})


def _code(grade_id, source, solution=False, grade=False, points=None):
    flags = {"solution": solution, "locked": not solution, "grade": grade}
    if grade:
        flags["points"] = points
    return _cell("code", grade_id, source, flags)


INTRO = """\
# Stage {n}: {title}

{body}

**How to work.** Write your code in the next cell where it says `YOUR CODE HERE`, then run
the cell: it saves the cell as `attention_lab/{module}.py` (the first line, `%%writefile ...`,
does that; keep it). Run the self-check after it. This stage is worth **{points} points** in
{checks} hidden checks at the end of the notebook.
"""

SELF_CHECK_TEXT = """\
## Check yourself

The public checks of this stage, run on the `attention_lab/` you saved, in a fresh Python
process (so they see your latest code, not an earlier import). They show the book's numbers
and say what is off; the hidden checks at the end test more than these.
"""

SELF_CHECK = """\
import sys
!{{sys.executable}} -m pytest -q -p no:cacheprovider -m stage{n} tests"""

GRADED_TEXT = """\
## Graded checks ({points} points, {n} checks)

The grader fills in the cells below when it grades your notebook; in your copy they are empty.
"""

def _grade_cell(check, module):
    """The hidden part names the check and nothing else: feedback shows it to students."""
    plural = "s" if check.points > 1 else ""
    return "\n".join([f"# {check.title} ({check.points} point{plural}), on attention_lab/{module}.py",
                      HIDDEN_BEGIN, "from autograder.gradecell import check",
                      f'passed, feedback = check("{check.id}")', "assert passed, feedback", HIDDEN_END])
