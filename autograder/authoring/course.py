"""An nbgrader course generated from ``solutions/`` and the check registry.

``attention-lab nbgrader init COURSE_DIR`` writes::

    nbgrader_config.py
    source/<assignment>/stage1_simple.ipynb ... (a notebook per stage of ``curriculum``)
    source/<assignment>/attention_lab/*.py      the stubs (nbgrader copies modules untouched), and the
                                                kit's own code of a stage the course gives
    source/<assignment>/tests/                  the public self-checks

One assignment with a notebook per stage, not an assignment per stage: the stages build on one
another (stage 4's wrapper is made of stage 3's ``CausalAttention``), so a student works in one
``attention_lab`` package from the first notebook to the last, and nbgrader still keeps a score
per notebook, that is per stage.

Each notebook explains its stage (the module's docstring), holds the module in one solution
cell (see ``notebooks``), a cell per public check of the stage that asserts what the check says
(worth 0 points, so that nbgrader's Validate fails a notebook whose public checks fail, and
autograde's points are the hidden checks' alone: ``public.selfchecks``), and one grade cell per
registered check with that check's points. A grade cell's hidden part only names the check; the
check itself runs in the isolated runner (``gradecell.check``), so nothing in a notebook,
released or autograded, holds an expected value.
"""
from __future__ import annotations

import ast
import hashlib
import json
import re
from pathlib import Path

from ..curriculum import STAGE_OF, STAGES
from ..delivery.classroom import public_test_title, public_tests
from ..delivery.nbgrader.pipelines import PUBLIC_CELL, SANITIZE
from ..delivery.report import LINE, wrapped
from ..errors import BuildError
from ..grading.config import CourseConfig, given_code
from ..grading.grade import worst_case
from ..grading.registry import declared
from ..intake import notebooks
from ..common.markers import BEGIN, HIDDEN_BEGIN, HIDDEN_END
from ..paths import KIT_ROOT
from ..public import selfchecks
from .build import planned_files

DEFAULT_ASSIGNMENT = "attention"
SCHEMA_VERSION = 3  # nbgrader's cell metadata format (0.9.x)
KERNEL = {"kernelspec": {"display_name": "Python 3 (ipykernel)", "language": "python", "name": "python3"},
          "language_info": {"name": "python"}}


def notebook_name(stage) -> str:
    return f"stage{stage.number}_{stage.module}"


def planned_course(assignment: str = DEFAULT_ASSIGNMENT, root: Path = KIT_ROOT, config=None) -> dict[str, bytes]:
    """Every file of the course that the kit owns, relative path -> content: the source of the
    assignment (a notebook per stage taught, with the course's points), and attention-lab's block
    of ``nbgrader_config.py`` (under ``CONFIG_BLOCK``: the file is merged, see ``init_course``)."""
    if not re.fullmatch(r"[A-Za-z0-9_-]+", assignment):
        raise BuildError(f"assignment name {assignment!r}: use letters, digits, '-' and '_' only")
    config = config or CourseConfig()
    source = f"source/{assignment}"
    files = {CONFIG_BLOCK: nbgrader_config(assignment, config).encode()}
    stubs = {p.name: c for p, c in planned_files(root).items() if p.parent.name == "attention_lab"}
    stubs.update({f"{m}.py": code.encode() for m, code in given_code(config, root=root).items()})
    for name, content in sorted(stubs.items()):
        files[f"{source}/attention_lab/{name}"] = content
    for path in sorted(p for p in (root / "assignments" / "tests").iterdir() if p.suffix in (".py", ".pt")):
        files[f"{source}/tests/{path.name}"] = path.read_bytes()  # the checks, their helpers, stage 10's weights
    for number in config.stages:
        stage = STAGES[number]
        solution = (root / "solutions" / "attention_lab" / f"{stage.module}.py").read_text()
        text = json.dumps(stage_notebook(stage, solution, config, root), indent=1, ensure_ascii=False) + "\n"
        files[f"{source}/{notebook_name(stage)}.ipynb"] = text.encode()
    return files


CONFIG_BLOCK = "nbgrader_config.py"
BEGIN_BLOCK = "# ---- attention-lab's settings: `attention-lab nbgrader init` rewrites this block, and only it ----"
END_BLOCK = "# ---- end of attention-lab's settings: yours go outside the block, where init leaves them ----"
MANIFEST = ".attention-lab-course.json"  # what init last wrote: a file changed since is the instructor's


def init_course(course_dir, assignment=DEFAULT_ASSIGNMENT, force=False, log=print, config=None):
    """Write the course into ``course_dir``, or update it: the assignment's source files the kit
    owns, and attention-lab's block of ``nbgrader_config.py``, whose other lines (the
    instructor's) are kept. A source file changed since init last wrote it is the instructor's:
    it is kept (and said), unless ``force``. Returns (course folder, {change: [files]})."""
    course = Path(course_dir)
    manifest = _read_manifest(course)
    changes = {"created": [], "updated": [], "kept (edited since init wrote it; --force to replace)": [],
               "unchanged": []}
    written = {}
    for rel, content in planned_course(assignment, config=config).items():
        path = course / rel
        if rel == CONFIG_BLOCK:
            content = _merged_config(path.read_text() if path.exists() else None, content.decode()).encode()
        old = path.read_bytes() if path.exists() else None
        # A module holding solution code is no edit of the instructor's: running a source notebook
        # wrote it, and the release guard sends the instructor here to restore the stub.
        solved_module = old is not None and "/attention_lab/" in rel and _holds_solution(old)
        edited = (old is not None and rel != CONFIG_BLOCK and manifest.get(rel) != _digest(old)
                  and old != content and not solved_module)
        if old == content:
            changes["unchanged"].append(rel)
        elif edited and not force:
            changes["kept (edited since init wrote it; --force to replace)"].append(rel)
            continue
        else:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(content)
            changes["created" if old is None else "updated"].append(rel)
        written[rel] = _digest(content)
    (course / MANIFEST).write_text(json.dumps({**manifest, **written}, indent=1, sort_keys=True) + "\n")
    for change, files in changes.items():
        if files and change != "unchanged":
            log(f"{change}: " + ", ".join(files))
    return course, changes


def _holds_solution(content: bytes) -> bool:
    text = content.decode(errors="replace")
    return BEGIN in text or HIDDEN_BEGIN in text


def _digest(content: bytes) -> str:
    return hashlib.sha256(content).hexdigest()


def _read_manifest(course: Path) -> dict:
    try:
        data = json.loads((course / MANIFEST).read_text())
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def _merged_config(existing, block) -> str:
    """``nbgrader_config.py`` with attention-lab's ``block`` in place of the one it holds, and every
    other line as it was. A file without a block (a course of an earlier kit, or the instructor's
    own) gets the block at its end, where its settings win over those before it."""
    if existing is None:
        return block
    if BEGIN_BLOCK in existing and END_BLOCK in existing:
        before, rest = existing.split(BEGIN_BLOCK, 1)
        after = rest.split(END_BLOCK, 1)[1]
        return before + block.rstrip("\n") + after
    return existing.rstrip("\n") + "\n\n" + block


def nbgrader_config(assignment: str, config=None) -> str:
    """attention-lab's block of ``nbgrader_config.py`` (``init_course`` merges it into the file)."""
    config = config or CourseConfig()
    # A given stage's module is the kit's, not the student's: autograde puts the source's copy back.
    modules = sorted(f"attention_lab/{p}" for p in ["__init__.py", *(f"{s.module}.py" for s in STAGES.values()
                                                                     if s.number not in config.given)])
    bounds = {n: int(worst_case(config.checks({n}), {"cpu", "meta", "cuda"})) + 1 for n in config.stages}
    return f'''\
{BEGIN_BLOCK}
c = get_config()  # noqa: F821
c.CourseDirectory.course_id = "attention-lab"

# A hidden grade cell runs its stage in attention-lab's isolated runner, whose own watchdog bounds it:
# each grade cell gets that bound for its own stage (stage: seconds, below; nbgrader's default of 30 s
# per cell would cut a slow but honest stage short, and a cut-short cell scores zero). Every other cell
# decides no points and gets Execute.timeout, so that a cell that never ends costs minutes, not hours.
from autograder.delivery.nbgrader.timeouts import StageTimeouts  # noqa: E402
c.Execute.timeout = {OTHER_CELL_TIMEOUT_S}
c.Execute.timeout_func = StageTimeouts({bounds!r}, other=c.Execute.timeout)

# The students' modules are their work. At autograde nbgrader replaces every file that is not a
# notebook with the source's copy (the stubs, and the kit's code of a given stage) unless it is listed here.
c.Autograde.exclude_overwriting = {{{assignment!r}: {modules!r}}}

# nbgrader copies modules into the release untouched: refuse to release one that holds solution
# code or hidden tests (running a source notebook writes its solution into source/.../attention_lab/).
from autograder.release_guard import refuse_solutions  # noqa: E402
c.GenerateAssignment.pre_convert_hook = refuse_solutions

# A hidden grade cell's released copy lacks its hidden part, so nbgrader would warn at autograde that
# its checksum changed, for every such cell of every student; warn only when a student changed it.
c.Autograde.sanitize_preprocessors = {SANITIZE!r}
{END_BLOCK}
'''


# The bound of a cell that is no grade cell (see nbgrader_config): ten times the slowest of the course's own, stage
# 10's training (half a minute on a laptop's CPU, left out under autograde, run by an instructor's Validate).
OTHER_CELL_TIMEOUT_S = 300


def stage_notebook(stage, solution: str, config=None, root: Path = KIT_ROOT) -> dict:
    config = config or CourseConfig()
    checks = config.checks({stage.number})
    points = sum(c.points for c in checks)
    given = [STAGE_OF[m] for m in config.given_modules({stage.number})]
    cells = [
        _markdown(f"{stage.module}-intro", _intro(stage, solution, points, len(checks), given)),
        _code(f"{stage.module}-code", notebooks.module_cell(stage.module, solution), solution=True),
        _markdown(f"{stage.module}-selfcheck-intro", SELF_CHECK_TEXT),
        *_public_cells(stage, root),
    ]
    looked = declared()[stage.number].looked  # declared in the stage's checks (``Checks.look``)
    if looked:
        imported, shown = looked
        cells += [_markdown(f"{stage.module}-look-intro", LOOK_TEXT),
                  _code(f"{stage.module}-look", LOOK_CELL.format(module=stage.module, imported=imported, shown=shown))]
    for name, text, code in stage_cells(stage):
        cells += [_markdown(f"{stage.module}-{name}-intro", text), _code(f"{stage.module}-{name}", code)]
    cells += [
        _markdown(f"{stage.module}-graded-intro", GRADED_TEXT.format(points=points, n=len(checks))),
    ]
    cells += [_code(c.id.replace(".", "-"), _grade_cell(c, stage.module), grade=True, points=c.points)
              for c in checks]
    return {"cells": cells, "metadata": KERNEL, "nbformat": 4, "nbformat_minor": 5}


def _intro(stage, solution, points, n_checks, given=()):
    """The notebook's opening: the module's docstring, after a word on each stage it builds on that
    the course gives (its code is the kit's, already in attention_lab/)."""
    doc = ast.get_docstring(ast.parse(solution)) or ""
    body = re.sub(r"``([^`]+)``", r"`\1`", doc.partition("\n")[2].strip())  # reST literals -> Markdown
    for m in given:
        body = GIVEN_TEXT.format(m=m, module=STAGES[m].module, title=STAGES[m].title, n=stage.number) + body
    return INTRO.format(n=stage.number, title=stage.title, body=body, module=stage.module, points=points,
                        checks=n_checks)


GIVEN_TEXT = """\
**Stage {m} is given in this course.** You do not write it: `attention_lab/{module}.py` already
holds the kit's own code of stage {m} ({title}), and this stage imports it. Stage {n} is
graded with the kit's own `{module}.py`, whatever your copy holds.

"""


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
does that; keep it). Run the public checks after it. This stage is worth **{points} points** in
{checks} hidden checks at the end of the notebook.
"""

SELF_CHECK_TEXT = """\
## Check yourself

The public checks of this stage, a cell each, run on the `attention_lab/` you saved. The first
one you run after a change runs them all, in a fresh Python process (so they see your latest
code, not an earlier import); the others read what it found. They show the book's numbers and
say what is off. nbgrader's **Validate** runs them too: a check that fails here fails Validate,
in the same words. They are worth no points; the hidden checks at the end grade, and test more
than these.
"""

# nbgrader's autograde sets NBGRADER_EXECUTION, and there only the grade cells count: a cell that costs
# seconds and decides nothing (the public checks: a second process importing torch and pytest, a third of
# a notebook's time; stage 10's training, cells/stage10_2_train.py: half a minute a student) says so instead
# of running, in these words (public/selfchecks.py holds them; tests/test_course.py holds the cells to them).
AUTOGRADING = f'os.environ.get("{selfchecks.AUTOGRADE_VARIABLE}") == "{selfchecks.AUTOGRADE}"'
NOT_RUN = selfchecks.NOT_RUN

# A cell per public check: its assert is what nbgrader's Validate reports (public/selfchecks.py says how).
# Validate prints the cell too, each line cut at 87 characters: the title is wrapped to fit (the longest test
# names alone do not).
PUBLIC_CHECK = """\
{title}
import sys
sys.path.insert(0, "tests")  # the public checks' folder
from selfchecks import verdict
passed, said = verdict("{file}",
                       "{test}")
assert passed, said"""


def _public_cells(stage, root):
    """A cell per public check of ``stage``, each a grade cell of 0 points: nbgrader's Validate reports
    the grade cells that fail (one of 0 points too), and autograde's points stay the hidden checks'."""
    tests = public_tests(stage, root)
    cells = []
    for k, node in enumerate(tests, 1):
        title = _comment(f"Public check {k} of {len(tests)}: {public_test_title(node)}", selfchecks.WIDTH)
        file, _, test = node.partition("::")
        code = PUBLIC_CHECK.format(title=title, file=file, test=test)
        cells.append(_code(PUBLIC_CELL.format(module=stage.module, n=k), code, grade=True, points=0))
    return cells


LOOK_TEXT = """\
## Look at your attention

Your own attention weights for the book's sentence, "Your journey starts with one step": row
*i* is how much token *i* attends to each token. Each row must sum to 1; in a causal layer the
outlined cells (the future) must stay 0, and any that do not are drawn in red.
"""

# A student's error or warning here is said in one line, as the public checks say it (where in the student's file,
# and what): a traceback would go through torch's and the drawing's own files, and Python prints a warning with the
# whole path of the folder it runs in; either would run past the feedback page.
LOOK_CELL = f"""\
import sys
import warnings
import torch
sys.path.insert(0, "tests")  # the public checks' folder holds the drawing helper
from feedback import describe_error, describe_warning, error_record, wrapped
from pictures import show_attention

torch.manual_seed(123)
with warnings.catch_warnings(record=True) as warned:
    from attention_lab.{{module}} import {{imported}}
    try:
        # display: IPython's, in every notebook
        display(show_attention({{shown}}))  # noqa: F821
    except NotImplementedError as exc:
        print(f"Not written yet ({{{{exc!r}}}}): fill in the code above, run its cell, then run this one again.")
    except Exception as exc:
        print(wrapped(describe_error(error_record(exc, "attention_lab")), {LINE}))
for said in warned:
    print(wrapped(describe_warning(said, "attention_lab"), {LINE}))"""

# The cells that put a stage's code to work, after its self-check: ``cells/stage<N>_<order>_<name>.py``, each
# the cell's Markdown as its docstring and the cell's code under it: Python files, linted as the kit's own
# code is (pyproject.toml names what a cell may take from the cells before it). Found by the stage's number.
CELLS = Path(__file__).with_name("cells")


def stage_cells(stage) -> list[tuple[str, str, str]]:
    """(name, Markdown, code) of each cell of ``stage`` in ``CELLS``, in their order."""
    found = []
    for path in CELLS.glob(f"stage{stage.number}_*.py"):
        named = re.fullmatch(rf"stage{stage.number}_(\d+)_(\w+)", path.stem)
        if named is None:
            raise BuildError(f"{path}: a notebook cell's file is named stage<N>_<order>_<name>.py")
        order, name = named.groups()
        text = path.read_text()
        body = ast.parse(text).body
        docstring = body[0] if body else None
        if not (isinstance(docstring, ast.Expr) and isinstance(docstring.value, ast.Constant)
                and isinstance(docstring.value.value, str)):
            raise BuildError(f"{path}: a notebook cell's file opens with its Markdown, as a docstring")
        markdown = docstring.value.value
        code = "".join(text.splitlines(keepends=True)[docstring.end_lineno:]).strip("\n")
        found.append((int(order), name, markdown, code))
    return [(name, markdown, code) for _, name, markdown, code in sorted(found)]


GRADED_TEXT = """\
## Graded checks ({points} points, {n} checks)

The grader fills in the cells below when it grades your notebook; in your copy they are empty.
"""

def _grade_cell(check, module):
    """The hidden part names the check and nothing else: feedback shows it to students, and shows the
    cell's first lines as they are (so they are wrapped: a long line would run past the page)."""
    plural = "s" if check.points > 1 else ""
    return "\n".join([_comment(f"{check.title} ({check.points} point{plural}), on attention_lab/{module}.py"),
                      HIDDEN_BEGIN, "from autograder.gradecell import check",
                      f'passed, feedback = check("{check.id}")', "assert passed, feedback", HIDDEN_END])


def _comment(text, width=LINE):
    """``text`` as comment lines of at most ``width`` columns, "# " included, wrapped at words."""
    return "\n".join(f"# {line}" for line in wrapped(text, width - 2).split("\n"))
