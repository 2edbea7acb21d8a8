"""The nbgrader course end to end, with the real nbgrader CLI and a real kernel.

One course is built once per session (``attention-lab nbgrader init``, ``nbgrader
generate_assignment``); four students submit, nbgrader autogrades them and writes feedback, and
each test compares one part of that with ``attention-lab grade`` on the same submitted files:

- alice: the reference, typed into the released notebooks (and saved as modules, as running
  the cells does);
- bob: the release, untouched, handing in the notebooks of stages 1 and 6-10 (carol's stages 4 and 5
  are untouched too, so every stage but 2 and 3, where carol's code is wrong, is autograded untouched);
- carol: partly right: stage 1 right, a seed's bug in stage 2 (``x @ self.W_key``), stage 3 without
  the 1/sqrt(d_k) scaling and noisy (warnings on, a warning per call, a line on stderr at import),
  stages 4 and 5 untouched, and no notebook after stage 5 handed in;
- mallory: untouched code plus one cell that makes every later cell that calls the grader do
  nothing, the kind of attack a kernel-side grader cannot stop (see docs/instructors/nbgrader.md);
  she hands in stage 1's notebook alone.

A notebook not handed in is worth 0 to nbgrader and to the kit alike (and costs no kernel: each
notebook autograded is a kernel, torch and a grading, about 4 s): 22 notebooks in all.

A copy of the course, made before autograde, is graded by ``attention-lab nbgrader import``
instead, with one more student:

- dave: the reference in ``attention_lab/simple.py``, and the notebooks untouched.
"""
from __future__ import annotations

import csv
import html
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from nbgrader.api import Gradebook

from autograder.authoring.build import planned_files
from autograder.authoring.course import DEFAULT_ASSIGNMENT as ASSIGNMENT
from autograder.authoring.course import init_course, notebook_name
from autograder.curriculum import STAGES
from autograder.delivery.nbgrader.pipelines import runs_public_checks
from autograder.grading.config import from_data
from autograder.grading.golden import load_golden
from autograder.grading.grade import grade
from autograder.grading.registry import max_points
from autograder.grading.results import stage_totals
from autograder.intake.notebooks import module_of, source_text
from autograder.common.markers import BEGIN, END, HIDDEN_BEGIN
from tools.zoo import hand_in, reference_code

ROOT = Path(__file__).resolve().parents[1]
SOLUTIONS = ROOT / "solutions" / "attention_lab"
# nbgrader runs `alembic` from PATH: the same environment's, beside Python's, or else the folder of the
# `nbgrader` on PATH (packages installed with pip --target, on a machine whose Python holds a CUDA torch).
BIN = Path(sys.executable).parent
if not (BIN / "nbgrader").exists() and shutil.which("nbgrader"):
    BIN = Path(shutil.which("nbgrader")).parent
STUDENTS = ("alice", "bob", "carol", "mallory")
NOISY = '''

import sys as _sys
import warnings as _warnings

print("carol: a debugging line on stderr", file=_sys.stderr)


class CausalAttention(CausalAttention):
    def forward(self, x):
        _warnings.warn("carol's forward was called")
        return super().forward(x)
'''
WARNINGS_ON = 'import warnings\nwarnings.simplefilter("always")\nprint("warnings on")'
BLANK_GRADER_CELLS = ('get_ipython().input_transformers_post.append(\n'
                      '    lambda lines: ["pass\\n"] if any("check(" in line for line in lines) else lines)')


def run(course, *args, timeout=1200, ok=True):
    env = {**os.environ, "PATH": f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}",
           # no user config or user kernel changes the run: the kernel is this environment's
           "JUPYTER_CONFIG_DIR": str(course.parent / "jupyter-config"),
           "JUPYTER_DATA_DIR": str(course.parent / "jupyter-data"),
           "JUPYTER_RUNTIME_DIR": str(course.parent / "jupyter-runtime")}
    proc = subprocess.run(args, cwd=course, env=env, capture_output=True, text=True, timeout=timeout)
    if ok:
        assert proc.returncode == 0, f"{' '.join(map(str, args))} failed:\n{proc.stdout}\n{proc.stderr[-6000:]}"
        # nbgrader logs a broken nbgrader_config.py and goes on without any of it
        assert "Exception while loading config" not in proc.stdout + proc.stderr, proc.stderr[-6000:]
    return proc


def zoo(name):
    return (ROOT / "tests" / "zoo" / "wrong" / f"{name}.py").read_text()


def submit(course, student, modules, extra_cells=(), stages=tuple(STAGES)):
    """The student's copy of the release with ``modules`` typed in and saved, plus ``extra_cells``
    (notebook -> sources) right after the module cell; of the notebooks, those of ``stages`` handed in."""
    folder = hand_in(course / "release" / ASSIGNMENT, course / "submitted" / student / ASSIGNMENT, modules)
    for n in set(STAGES) - set(stages):
        (folder / f"{notebook_name(STAGES[n])}.ipynb").unlink()
    for stem, sources in dict(extra_cells).items():
        path = folder / f"{stem}.ipynb"
        notebook = json.loads(path.read_text())
        at = 1 + next(i for i, c in enumerate(notebook["cells"]) if module_of(source_text(c)))
        notebook["cells"][at:at] = [{"cell_type": "code", "id": f"{student}-{i}", "metadata": {}, "outputs": [],
                                     "execution_count": None, "source": source} for i, source in enumerate(sources)]
        path.write_text(json.dumps(notebook, indent=1))
    return folder


@pytest.fixture(scope="session")
def course(tmp_path_factory):
    course = tmp_path_factory.mktemp("nbgrader") / "course"
    run(ROOT, sys.executable, "-m", "autograder.cli", "nbgrader", "init", str(course))
    run(course, BIN / "nbgrader", "generate_assignment", ASSIGNMENT)
    ref = reference_code()
    alice = submit(course, "alice", ref)
    (alice / "attention_lab" / "__init__.py").write_text('"""alice\'s own package docstring"""\n')
    submit(course, "bob", {}, stages=(1, 6, 7, 8, 9, 10))
    submit(course, "carol", {
        "simple": ref["simple"],
        "self_attention": ref["self_attention"] + "\n\n" + zoo("v2_matmul_linear"),
        "causal": ref["causal"] + "\n\n" + zoo("causal_no_scaling") + NOISY,
    }, extra_cells={"stage3_causal": [WARNINGS_ON]}, stages=range(1, 6))
    submit(course, "mallory", {}, extra_cells={"stage1_simple": [BLANK_GRADER_CELLS]}, stages=[1])
    shutil.copytree(course, course.with_name("imported"))
    autograde = run(course, BIN / "nbgrader", "autograde", ASSIGNMENT, "--create")
    run(course, BIN / "nbgrader", "generate_feedback", ASSIGNMENT)
    return course, autograde


@pytest.fixture(scope="session")
def imported(course):
    """The same class graded by ``attention-lab nbgrader import``, dave added; then nbgrader's own
    feedback and export, which run no kernel."""
    course = course[0].with_name("imported")
    dave = hand_in(course / "release" / ASSIGNMENT, course / "submitted" / "dave" / ASSIGNMENT, {})
    (dave / "attention_lab" / "simple.py").write_text(reference_code()["simple"])
    notebook = dave / "stage1_simple.ipynb"  # markdown that would run in the feedback page (and formgrader)
    data = json.loads(notebook.read_text())
    data["cells"].insert(1, {"cell_type": "markdown", "id": "dave-md", "metadata": {}, "source": HOSTILE_MARKDOWN})
    data["cells"].insert(2, {"cell_type": "raw", "id": "dave-raw", "metadata": {"format": "text/html"},
                             "source": "<script>window.__pwned = 'raw';</script>"})
    notebook.write_text(json.dumps(data, indent=1))
    done = run(course, sys.executable, "-m", "autograder.cli", "nbgrader", "import", ".", "--jobs", "2")
    run(course, BIN / "nbgrader", "generate_feedback", ASSIGNMENT)
    run(course, BIN / "nbgrader", "export")
    return course, done


HOSTILE_MARKDOWN = ("My notes <script>window.__pwned = 'script';</script>\n\n"
                    "<img src=x onerror=\"window.__pwned = 'onerror'\">\n\n"
                    "[a link](javascript:window.__pwned='link')\n\n**still shown**\n")


def gradebook(course, students=STUDENTS):
    """{student: {stage: points}} as nbgrader's gradebook has it."""
    stage_of = {notebook_name(s): s.number for s in STAGES.values()}
    with Gradebook(f"sqlite:///{course / 'gradebook.db'}", "attention-lab") as gb:
        return {student: {stage_of[nb.name]: nb.score for nb in gb.find_submission(ASSIGNMENT, student).notebooks}
                for student in students}


def page_text(path):
    return html.unescape(re.sub(r"<[^>]+>", "", path.read_text()))


def kit_points(folder, server):
    return {stage: t.points for stage, t in stage_totals(grade(folder, server=server).results).items()}


def test_release_has_no_solution_and_no_hidden_check(course):
    course, _ = course
    release = course / "release" / ASSIGNMENT
    files = [p for p in release.rglob("*") if p.is_file() and p.suffix != ".pt"]  # .pt: stage 10's public weights
    solution_only = solution_lines() - public_lines()
    assert len(solution_only) > 50, "the scan needs solution lines to look for"
    for path in files:
        text = path.read_text()
        for marker in (BEGIN, HIDDEN_BEGIN, "gradecell", "check("):
            assert marker not in text, f"{path.relative_to(course)} holds {marker!r}"
        lines = {line.strip() for line in text.replace("\\n", "\n").splitlines()}
        leaked = sorted(lines & solution_only)
        assert not leaked, f"{path.relative_to(course)} holds solution code: {leaked[:3]}"
    stubs = {p.name: c.decode() for p, c in planned_files(ROOT).items() if p.parent.name == "attention_lab"}
    for name, code in stubs.items():
        assert (release / "attention_lab" / name).read_text() == code, f"attention_lab/{name} is not the stub"
    for path in release.glob("*.ipynb"):
        cells = [module_of(source_text(c)) for c in json.loads(path.read_text())["cells"] if c["cell_type"] == "code"]
        (module, code), = [c for c in cells if c]
        assert code == stubs[f"{module}.py"], f"{path.name}: the released module cell is not the stub"


def solution_lines():
    lines, inside = set(), False
    for path in SOLUTIONS.glob("*.py"):
        for line in path.read_text().splitlines():
            if line.strip() in (BEGIN, END):
                inside = line.strip() == BEGIN
            elif inside and len(line.strip()) > 8 and not line.strip().startswith("#"):
                lines.add(line.strip())
    return lines


def public_lines():
    """Lines students see anyway: the stubs and the public checks."""
    texts = [c.decode() for p, c in planned_files(ROOT).items() if p.suffix == ".py"]
    texts += [p.read_text() for p in (ROOT / "assignments" / "tests").glob("*.py")]
    return {line.strip() for text in texts for line in text.splitlines()}


def test_autograde_gives_the_same_points_per_stage_as_attention_lab_grade(course, grading_server):
    course, _ = course
    book = gradebook(course)
    for student in ("alice", "bob", "carol"):
        folder = course / "submitted" / student / ASSIGNMENT
        assert book[student] == kit_points(folder, grading_server), \
            f"{student}: nbgrader and attention-lab grade disagree"
    assert book["alice"] == {n: max_points(n) for n in STAGES}
    assert book["bob"] == {n: 0 for n in STAGES}
    carol = book["carol"]
    assert carol[1] == max_points(1) and carol[4] == carol[5] == 0
    assert all(carol[n] == 0 for n in STAGES if n > 5), carol  # the notebooks she did not hand in
    for n in (2, 3):
        assert 0 < carol[n] < max_points(n), f"carol's stage {n} should be partly right: {carol}"


def test_warnings_and_stderr_do_not_zero_a_grade_cell(course):
    course, _ = course
    notebook = json.loads((course / "autograded" / "carol" / ASSIGNMENT / "stage3_causal.ipynb").read_text())
    outputs = [o for c in notebook["cells"] if c["cell_type"] == "code" for o in c["outputs"]]
    assert any("warnings on" in "".join(o.get("text", "")) for o in outputs), "carol's cell did not run"
    graded = [c for c in notebook["cells"] if c["metadata"].get("nbgrader", {}).get("grade")]
    for cell in graded:
        assert not [o for o in cell["outputs"] if o.get("name") == "stderr"], cell["source"]
    passed = [c for c in graded if not [o for o in c["outputs"] if o["output_type"] == "error"]]
    assert passed, "none of carol's stage 3 grade cells passed"


def test_autograde_starts_no_public_checks_and_they_add_no_points(course):
    """Each public check's cell, run by autograde's kernel, says it was not run: only grade cells count there,
    and the checks' pytest would cost each notebook a process that imports torch (test_course runs the cells
    as a student). Worth 0 points, they leave every notebook's maximum as the hidden checks make it."""
    course, _ = course
    for path in (course / "autograded").glob(f"*/{ASSIGNMENT}/*.ipynb"):
        cells = [c for c in json.loads(path.read_text())["cells"] if public_check_cell(c)]
        assert cells, path  # every stage has public checks (a new stage's guide asks for one at least)
        for cell in cells:
            said = "".join("".join(o.get("text", "")) for o in cell["outputs"])
            assert said.startswith("Not run while autograding") and "passed" not in said, (path, said)
            assert not [o for o in cell["outputs"] if o["output_type"] == "error" or o.get("name") == "stderr"]
    with Gradebook(f"sqlite:///{course / 'gradebook.db'}", "attention-lab") as gb:
        for stage in STAGES.values():
            assert gb.find_notebook(notebook_name(stage), ASSIGNMENT).max_score == max_points(stage.number)


def public_check_cell(cell):
    return runs_public_checks(cell["metadata"].get("nbgrader", {}).get("grade_id", ""))


def test_validate_fails_a_wrong_notebook_in_the_public_checks_own_words_and_passes_a_right_one(course, tmp_path):
    """What a student sees on pressing Validate (``nbgrader validate``, in the student's folder, with no course
    configuration): stage 1 typed in with normalize_by_sum dividing by the largest score and a softmax that
    forgets to subtract the maximum fails, on those two public checks' cells, with what pytest says of them
    in the same folder; the reference passes. The hidden checks stay out of the release (see
    test_release_has_no_solution_and_no_hidden_check)."""
    course, _ = course
    ref = reference_code()
    wrong = ref["simple"] + "\n\n" + zoo("normalize_by_max") + OVERFLOWING_SOFTMAX
    folder = hand_in(course / "release" / ASSIGNMENT, tmp_path / "student", {"simple": wrong})
    said = run(folder, sys.executable, "-m", "pytest", "-vv", "-p", "no:cacheprovider", "tests/test_stage1_simple.py",
               ok=False).stdout
    failed = dict(re.findall(r"^FAILED tests/test_stage1_simple\.py::test_(\w+) - (?:Failed: )?(.*)$", said,
                             flags=re.M))
    assert sorted(failed) == ["normalize_by_sum_gives_the_books_weights",
                              "softmax_stable_gives_the_books_weights_and_stays_finite_for_large_scores"], said
    validated = run(folder, BIN / "nbgrader", "validate", "stage1_simple.ipynb", ok=False).stdout  # exits 0 anyway
    assert "VALIDATION FAILED ON 2 CELL(S)" in " ".join(validated.split()), validated
    cells = validated.split("The following cell failed:")[1:]
    assert len(cells) == 2, validated
    for (test, sentence), cell in zip(sorted(failed.items(), key=lambda kv: "softmax" in kv[0]), cells):
        assert "# Public check" in cell and test.replace("_", " ") in " ".join(cell.replace("#", " ").split()), cell
        error = cell.split("AssertionError:")[-1]
        assert " ".join(sentence.split()) in " ".join(error.split()), (sentence, cell)
        assert not [line for line in error.splitlines() if line.endswith("...")], cell  # Validate cuts a long line
    hand_in(course / "release" / ASSIGNMENT, tmp_path / "right", {"simple": ref["simple"]})
    validated = run(tmp_path / "right", BIN / "nbgrader", "validate", "stage1_simple.ipynb").stdout
    assert "Success! Your notebook passes all the tests." in validated, validated


OVERFLOWING_SOFTMAX = '''

def softmax_stable(x):  # the naive softmax: exp(1000) overflows
    return torch.exp(x) / torch.exp(x).sum(dim=-1, keepdim=True)
'''


def test_students_modules_are_not_replaced_at_autograde(course):
    course, _ = course
    for student in ("alice", "carol"):
        submitted = course / "submitted" / student / ASSIGNMENT / "attention_lab"
        autograded = course / "autograded" / student / ASSIGNMENT / "attention_lab"
        for path in submitted.glob("*.py"):  # __init__.py included: no notebook cell rewrites that one
            assert (autograded / path.name).read_text() == path.read_text(), f"{student}'s {path.name} was replaced"


def test_grading_a_single_notebook_grades_its_stage(course, grading_server):
    course, _ = course
    notebook = course / "submitted" / "carol" / ASSIGNMENT / "stage2_self_attention.ipynb"
    results = grade(notebook, server=grading_server).results
    assert {r.stage for r in results} == {2}
    assert kit_points(notebook, grading_server) == {2: gradebook(course)["carol"][2]}


def test_feedback_shows_failed_checks_and_no_hidden_expected_value(course, grading_server):
    course, _ = course
    page = (course / "feedback" / "carol" / ASSIGNMENT / "stage3_causal.html").read_text()
    text = html.unescape(re.sub(r"<[^>]+>", "", page))
    failed = [r for r in grade(course / "submitted" / "carol" / ASSIGNMENT, server=grading_server).results
              if r.stage == 3 and not r.passed]
    assert failed, "carol should fail a stage 3 check"
    for r in failed:  # wrapped at words: the page's blocks keep their lines as they are
        assert " ".join(r.feedback.splitlines()[0].split()) in " ".join(text.split()), \
            f"the feedback of {r.id} is not in carol's feedback"
    assert_wrapped(course / "autograded" / "carol" / ASSIGNMENT / "stage3_causal.ipynb")
    hidden = hidden_numbers() - public_numbers()
    assert len(hidden) > 100, "the scan needs hidden numbers to look for"
    shown = set(re.findall(r"-?\d+\.\d{4}\b", text))
    assert not shown & hidden, f"carol's feedback shows hidden expected values: {sorted(shown & hidden)[:5]}"
    # the failed seeded check shows carol's own weights for the book's sentence (autograde's kernel path)
    assert "journey" in pictures_in(page), "no picture of carol's attention in her feedback"


def assert_wrapped(notebook):
    """The feedback of a failed check is wrapped at words: the page shows it in a block that does not
    wrap by itself, so a long line would be cut off there."""
    errors = [o for cell in json.loads(notebook.read_text())["cells"] for o in cell.get("outputs", [])
              if o["output_type"] == "error"]
    long = [line for o in errors for line in o["evalue"].splitlines() if len(line) > 110]
    assert errors and not long, f"feedback lines that the page would cut off: {long[:2]}"


def pictures_in(page):
    """The SVG text of every picture a feedback page shows (nbconvert inlines them as data: URIs)."""
    import base64

    found = re.findall(r"data:image/svg\+xml;base64,([^\"']+)", page)
    return "".join(base64.b64decode(data).decode() for data in found)


def hidden_numbers():
    """Every value of the golden data, as the feedback would print it (4 decimals)."""
    found = set()

    def walk(obj):
        if isinstance(obj, torch.Tensor) and obj.is_floating_point():
            found.update(f"{v:.4f}" for v in obj.flatten().tolist() if 0.01 < abs(v) < 100 and abs(v) != 1)
        elif isinstance(obj, dict):
            for value in obj.values():
                walk(value)
        elif isinstance(obj, list):
            for value in obj:
                walk(value)

    walk(load_golden())
    return found


def public_numbers():
    """Numbers the book prints: feedback may show those."""
    text = (ROOT / "autograder" / "public" / "book.py").read_text()
    return set(re.findall(r"-?\d+\.\d{4}\b", text)) | {f"{float(v):.4f}" for v in re.findall(r"-?\d+\.\d+", text)}


def test_a_kernel_side_grader_can_be_gamed_and_the_isolated_one_cannot(course, grading_server):
    """The README's claim, shown: nbgrader runs grade cells in the student's kernel."""
    course, _ = course
    folder = course / "submitted" / "mallory" / ASSIGNMENT
    assert kit_points(folder, grading_server) == {n: 0 for n in STAGES}
    assert gradebook(course)["mallory"][1] == max_points(1), "the attack on nbgrader's kernel no longer works"


def test_autograde_no_longer_warns_of_a_changed_checksum_for_every_hidden_cell(course):
    course, autograde = course
    said = autograde.stdout + autograde.stderr
    assert "autograding" in said.lower() and "has changed" not in said, said[-3000:]


def test_import_puts_the_grades_of_autograde_in_the_gradebook_for_honest_students(course, imported):
    imported_course, done = imported
    book, ours = gradebook(course[0]), gradebook(imported_course, STUDENTS + ("dave",))
    for student in ("alice", "bob", "carol"):
        assert ours[student] == book[student], f"{student}: import and autograde disagree"
    assert "has changed" not in done.stdout + done.stderr


def test_import_gives_the_kernel_cheat_nothing(course, imported):
    assert gradebook(course[0])["mallory"][1] == max_points(1), "the attack on nbgrader's kernel no longer works"
    assert gradebook(imported[0])["mallory"] == {n: 0 for n in STAGES}


def test_import_runs_no_kernel_and_feedback_shows_the_trusted_verdicts(imported, grading_server):
    course, _ = imported
    carol = course / "autograded" / "carol" / ASSIGNMENT / "stage3_causal.ipynb"
    cells = json.loads(carol.read_text())["cells"]
    outputs = [o for c in cells if c["cell_type"] == "code" for o in c["outputs"]]
    assert not any("warnings on" in "".join(o.get("text", "")) for o in outputs), "carol's own cell was run"
    public = [c for c in cells if public_check_cell(c)]
    assert public and all("".join(c["outputs"][0]["text"]).startswith("Not run here") for c in public)
    text = page_text(course / "feedback" / "carol" / ASSIGNMENT / "stage3_causal.html")
    failed = [r for r in grade(course / "submitted" / "carol" / ASSIGNMENT, server=grading_server).results
              if r.stage == 3 and not r.passed]
    assert failed
    for r in failed:  # wrapped at words: the page's blocks keep their lines as they are
        assert " ".join(r.feedback.splitlines()[0].split()) in " ".join(text.split()), \
            f"the feedback of {r.id} is not in carol's feedback"
    assert_wrapped(carol)
    assert "passed (" in text
    page = (course / "feedback" / "carol" / ASSIGNMENT / "stage3_causal.html").read_text()
    assert "journey" in pictures_in(page), "no picture of carol's attention in her imported feedback"


def test_every_picture_of_the_feedback_says_what_it_shows_in_its_alt_text(course, imported):
    """carol's stage 3 feedback, from autograde's kernel (her own attention drawn by the look cell, a failed
    check's pictures) and from import (a failed check's pictures, from the trusted record): every picture is an
    <img> whose alt text names the kind of picture and the title drawn in it, never nbconvert's stand-in
    ("No description has been provided for this image") or nothing."""
    import base64

    for folder in (course[0], imported[0]):
        page = (folder / "feedback" / "carol" / ASSIGNMENT / "stage3_causal.html").read_text()
        found = images_in(page)
        assert found, f"no picture in carol's feedback from {folder.name}"
        for image in found:
            svg = base64.b64decode(image["src"].removeprefix("data:image/svg+xml;base64,")).decode()
            title = html.unescape(re.search(r"<text[^>]*>([^<]*)</text>", svg).group(1))  # drawn first, in bold
            alt = image.get("alt") or ""
            assert alt.startswith(("A heatmap of ", "A bar chart of ", "A list of ")) and title in alt, (title, alt)


def images_in(page):
    """The attributes of every <img> of a page, unescaped."""
    from html.parser import HTMLParser

    found = []

    class Images(HTMLParser):
        def handle_starttag(self, tag, attrs):
            if tag == "img":
                found.append(dict(attrs))

    Images().feed(page)
    return found


def test_the_look_cell_says_a_students_error_in_one_line_not_a_traceback(course):
    """carol's SelfAttention_v2 multiplies by the nn.Linear itself: the "Look at your attention" cell of her
    autograded stage 2 says where in her file and what, as the public checks do, in lines that fit the page
    (a traceback went through torch's files and the grading machine's paths, past the page)."""
    course, _ = course
    cells = json.loads((course / "autograded" / "carol" / ASSIGNMENT / "stage2_self_attention.ipynb").read_text())
    (look,) = [c for c in cells["cells"] if c["metadata"].get("nbgrader", {}).get("grade_id", "").endswith("-look")]
    said = "".join("".join(o.get("text", "")) for o in look["outputs"])
    assert not [o for o in look["outputs"] if o["output_type"] == "error"], look["outputs"]
    assert " ".join(said.split()).startswith("SelfAttention_v2.forward raised TypeError at "
                                             "attention_lab/self_attention.py line"), said
    assert max(len(line) for line in said.splitlines()) <= 101, said


def test_no_line_of_a_feedback_page_runs_past_it(course, imported, browser):
    """Every feedback page of the class, both ways graded, opened in headless Chromium 1280 px wide (a
    laptop's screen): no preformatted block (a cell's code, its output, an error) holds a line wider than the
    block the page gives it, which the page would cut off or make the student scroll sideways to read. The
    kit writes the grade cells' titles, a passed check's line, an error's feedback and its own notes
    wrapped; the code students type is theirs (the reference's lines fit)."""
    page = browser.new_page(viewport={"width": 1280, "height": 800})
    try:
        for folder in (course[0], imported[0]):
            pages = sorted((folder / "feedback").glob(f"*/{ASSIGNMENT}/*.html"))
            assert len(pages) >= 20, pages
            for path in pages:
                page.goto(path.as_uri(), wait_until="load")
                wide = page.evaluate("""() => [...document.querySelectorAll('pre')]
                    .filter(block => block.scrollWidth > block.clientWidth + 1)
                    .map(block => block.innerText.split('\\n').reduce((a, b) => b.length > a.length ? b : a))""")
                assert not wide, f"{path.relative_to(folder)}: lines past the page: {wide[:3]}"
    finally:
        page.close()


def test_a_module_file_that_differs_from_its_notebook_cell_is_named_in_the_feedback(imported):
    course, _ = imported
    assert gradebook(course, ("dave",))["dave"][1] == 0  # the notebook's cell (the stub) was graded
    text = page_text(course / "feedback" / "dave" / ASSIGNMENT / "stage1_simple.html")
    assert "attention_lab/simple.py differs from the module cell of stage1_simple.ipynb" in text, text[:3000]


def test_the_export_after_import_has_the_trusted_totals_and_the_kits_csv_has_stage_columns(imported):
    course, _ = imported
    with open(course / "grades.csv", newline="") as f:  # nbgrader export's
        totals = {row["student_id"]: float(row["raw_score"]) for row in csv.DictReader(f)}
    with open(course / "attention-lab" / f"{ASSIGNMENT}-grades.csv", newline="") as f:
        ours = {row["student"]: row for row in csv.DictReader(f)}
    book = gradebook(course, STUDENTS + ("dave",))
    for student, stages in book.items():
        assert totals[student] == sum(stages.values()) == float(ours[student]["total"]), student
        assert {n: float(ours[student][f"stage{n}"]) for n in STAGES} == stages, student


def test_import_refuses_a_folder_that_is_no_course(tmp_path):
    proc = run(ROOT, sys.executable, "-m", "autograder.cli", "nbgrader", "import", str(tmp_path), ok=False)
    assert proc.returncode == 2 and "is not an nbgrader course with submissions" in proc.stderr


def test_release_guard_refuses_solution_code_in_source_modules(tmp_path):
    """On a course of stage 3 alone: the guard reads every module of the source folder (a course of one
    stage ships them all), and nbgrader releases one notebook, not ten, twice (a few seconds each)."""
    course, one_stage = tmp_path / "course", from_data({"stages": [3]})
    init_course(course, config=one_stage, log=lambda _: None)
    # What running the source notebook's module cell does: it saves the solution, markers and all.
    module = course / "source" / ASSIGNMENT / "attention_lab" / "causal.py"
    module.write_text((SOLUTIONS / "causal.py").read_text())
    proc = run(course, BIN / "nbgrader", "generate_assignment", ASSIGNMENT, ok=False)
    assert proc.returncode != 0
    said = proc.stdout + proc.stderr
    assert "nothing was released. attention_lab/causal.py line" in said
    assert "Traceback" not in said, said  # one paragraph, not a traceback
    assert not (course / "release" / ASSIGNMENT).exists(), "a release with solution code was left behind"
    # The advice works: init restores the module (it holds solution code) and the release goes through.
    init_course(course, config=one_stage, log=lambda _: None)
    assert module.read_text() == (ROOT / "assignments" / "attention_lab" / "causal.py").read_text()
    run(course, BIN / "nbgrader", "generate_assignment", ASSIGNMENT)


def test_import_says_when_its_gradings_went_without_a_layer_of_the_kit(tmp_path):
    """import grades in the isolated runner, as grade-all does: where those gradings went without one of
    the kit's layers (here the syscall filter, though the namespaces still hold what it holds), what import
    prints says so, loudly, and names it. On a course of stage 1 alone, handed in by one student."""
    course = tmp_path / "course"
    init_course(course, config=from_data({"stages": [1]}), log=lambda _: None)
    (course / "attention-lab.toml").write_text("stages = [1]\n")  # what import grades
    run(course, BIN / "nbgrader", "generate_assignment", ASSIGNMENT)
    hand_in(course / "release" / ASSIGNMENT, course / "submitted" / "ann" / ASSIGNMENT,
            {"simple": reference_code()["simple"]})
    without_the_filter = ("import sys\n"
                          "from autograder.sandbox import protocol\n"
                          "protocol.KERNEL_LAYERS = tuple(x for x in protocol.KERNEL_LAYERS if x != 'seccomp')\n"
                          "from autograder.cli import main\n"
                          "sys.exit(main(sys.argv[1:]))\n")
    done = run(course, sys.executable, "-c", without_the_filter, "nbgrader", "import", ".")
    said = done.stdout + done.stderr
    assert ("isolation: WARNING (1 of 1 gradings): graded without seccomp (seccomp not tried): network, processes, "
            "memory and ipc held by fewer layers than the kit has") in said, said[-3000:]


def test_a_students_markdown_is_inert_in_the_feedback_page(imported, browser):
    """dave's notebook carries <script>, <img onerror> and a javascript: link in markdown, and a
    raw HTML cell: his feedback page, opened in headless Chromium, runs none of them and still shows
    his text. CI requires the browser (ATTENTION_LAB_BROWSER_TESTS=required)."""
    course, _ = imported
    page_path = course / "feedback" / "dave" / ASSIGNMENT / "stage1_simple.html"
    source = page_path.read_text()
    assert "still shown" in source and "My notes" in source
    assert "onerror" not in source and "javascript:window" not in source and "__pwned" not in source
    page = browser.new_page()
    try:
        dialogs = []
        page.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
        page.goto(page_path.as_uri(), wait_until="load")
        page.wait_for_timeout(500)
        for link in page.query_selector_all("a"):
            assert not (link.get_attribute("href") or "").startswith("javascript:")
        assert page.evaluate("window.__pwned === undefined"), page.evaluate("window.__pwned")
        assert not dialogs
    finally:
        page.close()
