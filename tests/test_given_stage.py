"""A course that teaches stages 1-4 and 9 and gives stage 8 (``given = [8]``): a perfect student, who
never wrote stage 8, gets every point in every grading path: ``grade``, ``grade-all``, nbgrader
(``nbgrader import``), Gradescope (module files, no modern.py at all) and GitHub Classroom (the
template's public tests). Before ``given``, such a course was accepted and a perfect student lost
20-30 points in each path to the stub of a stage nobody asked them to write."""
from __future__ import annotations

import csv
import shlex
import shutil
import sys

import pytest
import yaml

from autograder.authoring.course import DEFAULT_ASSIGNMENT as ASSIGNMENT
from tools.zoo import hand_in, reference_code
from autograder.delivery.classroom import export as export_classroom
from autograder.delivery.classrun.grade_all import grade_all
from autograder.delivery.gradescope import export as export_gradescope
from autograder.grading.config import FILE, from_data, given_code
from autograder.grading.grade import grade
from autograder.grading.results import stage_totals
from tests.test_classroom import GRADER, step_stage
from tests.test_gradescope import autograde, stage_of
from tests.test_nbgrader import BIN, gradebook, run
from tests.test_public_checks import PytestRun

COURSE = {"stages": [1, 2, 3, 4, 9], "given": [8]}
CONFIG = from_data(COURSE)
FULL = {n: CONFIG.max_points(n) for n in CONFIG.stages}


def perfect(root):
    """What a perfect student of this course writes: the reference of the stages taught."""
    return {m: code for m, code in reference_code(root).items() if m in ("simple", "self_attention", "causal",
                                                                        "multihead", "frontier")}


@pytest.fixture(scope="module")
def student(root, tmp_path_factory):
    """The handout as the student left it: the reference of the taught stages, stage 8's file untouched."""
    folder = tmp_path_factory.mktemp("perfect") / "ann"
    shutil.copytree(root / "assignments" / "attention_lab", folder / "attention_lab")
    for module, code in perfect(root).items():
        (folder / "attention_lab" / f"{module}.py").write_text(code)
    return folder


def test_grade_gives_every_point_and_says_stage_8_was_the_kits(student, grading_server):
    graded = grade(student, config=CONFIG, server=grading_server)
    assert {n: t.points for n, t in stage_totals(graded.results).items()} == FULL
    assert any("modern.py is given in this course" in note for note in graded.notes)


def test_grade_all_gives_every_point(student, tmp_path):
    klass = tmp_path / "class"
    shutil.copytree(student, klass / "ann")
    assert grade_all(klass, tmp_path / "grades.csv", jobs=1, config=CONFIG, log=lambda text: None) == 0
    with open(tmp_path / "grades.csv", newline="") as f:
        (row,) = list(csv.DictReader(f))
    assert (int(row["total"]), int(row["out_of"])) == (sum(FULL.values()),) * 2
    assert {n: int(row[f"stage{n}"]) for n in FULL} == FULL


def test_gradescope_gives_every_point_to_module_files_without_modern_py(root, tmp_path):
    archive = tmp_path / "autograder.zip"
    export_gradescope(archive, CONFIG)

    def fill(submission):
        for module, code in perfect(root).items():
            (submission / f"{module}.py").write_text(code)

    proc, results = autograde(archive, tmp_path, fill)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    earned = {n: sum(t["score"] for t in results["tests"] if stage_of(t) == n) for n in FULL}
    assert earned == FULL, [t["output"] for t in results["tests"] if t["score"] < t["max_score"]][:3]


def test_the_classroom_template_gives_every_point(root, tmp_path):
    template = tmp_path / "template"
    export_classroom(template, CONFIG)
    assert (template / "attention_lab" / "modern.py").read_text() == given_code(CONFIG)["modern"]
    for module, code in perfect(root).items():
        (template / "attention_lab" / f"{module}.py").write_text(code)
    workflow = yaml.safe_load((template / ".github" / "workflows" / "classroom.yml").read_text())
    (job,) = workflow["jobs"].values()
    graders = [s for s in job["steps"] if s.get("uses") == GRADER]
    assert {n: sum(s["with"]["max-score"] for s in graders if step_stage(s) == n) for n in FULL} == FULL
    files = sorted({shlex.split(s["with"]["command"])[-1].split("::")[0] for s in graders})
    code, output = PytestRun("-q", *files, cwd=template).result()
    assert code == 0, output[-4000:]


def test_nbgrader_import_puts_every_point_in_the_gradebook(root, tmp_path):
    course = tmp_path / "course"
    (tmp_path / FILE).write_text("stages = [1, 2, 3, 4, 9]\ngiven = [8]\n")
    run(root, sys.executable, "-m", "autograder.cli", "nbgrader", "init", str(course), "--config", str(tmp_path / FILE))
    run(course, BIN / "nbgrader", "generate_assignment", ASSIGNMENT)
    hand_in(course / "release" / ASSIGNMENT, course / "submitted" / "ann" / ASSIGNMENT, perfect(root))
    run(course, sys.executable, "-m", "autograder.cli", "nbgrader", "import", ".", "--config", str(tmp_path / FILE))
    assert gradebook(course, ("ann",))["ann"] == FULL


GPT_COURSE = from_data({"stages": [10], "given": [3, 4, 8]})  # stage 10 alone: its model is made of stages 3, 4 and 8


def test_a_gpt_course_gives_every_point_with_grade_and_gradescope(root, tmp_path, grading_server):
    """Stage 10 taught alone, the stages its code imports given: a perfect student who wrote gpt.py only
    gets every point, from the handout (the other files stubs) and from Gradescope (gpt.py alone)."""
    gpt = reference_code(root)["gpt"]
    folder = tmp_path / "bo"
    shutil.copytree(root / "assignments" / "attention_lab", folder / "attention_lab")
    (folder / "attention_lab" / "gpt.py").write_text(gpt)
    full = {10: GPT_COURSE.max_points(10)}
    graded = grade(folder, config=GPT_COURSE, server=grading_server)
    assert {n: t.points for n, t in stage_totals(graded.results).items()} == full
    archive = tmp_path / "autograder.zip"
    export_gradescope(archive, GPT_COURSE)
    proc, results = autograde(archive, tmp_path / "gs", lambda submission: (submission / "gpt.py").write_text(gpt))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert sum(t["score"] for t in results["tests"] if stage_of(t) == 10) == full[10]
