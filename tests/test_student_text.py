"""Two audiences, two texts: what a student is handed (a grade-all record, which is Gradescope's
results.json, and so the feedback nbgrader import writes) holds no path of the grading machine
and no advice meant for the instructor; the instructor's log keeps the detail.

The class is a zoo of broken submissions, graded by the CLI as an instructor runs it."""
import json
import subprocess
import sys
import zipfile

import pytest

STAGES = ["1", "2", "3"]
# Advice for whoever runs the grader, which a student cannot act on.
# (A student's own failing import is theirs to read; a module of the lab not handed in is said plainly.)
INSTRUCTOR_ONLY = ("pass the folder", "attention-lab ", "--", "chmod", "Traceback", "No module named 'attention_lab",
                   "grade-all", "a copy of assignments/")


def broken_class(folder, root):
    """student -> what is wrong with the submission."""
    solutions = root / "solutions" / "attention_lab"

    def package(student, **modules):
        pkg = folder / student / "attention_lab"
        pkg.mkdir(parents=True)
        for module, text in modules.items():
            (pkg / f"{module}.py").write_text(text)
        return pkg

    (folder / "empty").mkdir(parents=True)  # nothing handed in
    (folder / "notes_only").mkdir()
    (folder / "notes_only" / "answers.txt").write_text("I did it all in my head")
    package("init_only", __init__="")  # a package with none of the modules
    package("stage1_only", simple=(solutions / "simple.py").read_text())  # stages 2 and 3 missing
    package("syntax_error", simple=(solutions / "simple.py").read_text(), causal="def causal_weights(:\n    pass\n")
    package("import_error", simple="import numpy_that_does_not_exist\n")
    (folder / "corrupt.zip").write_bytes(b"PK\x03\x04 this is not a zip")
    with zipfile.ZipFile(folder / "wrong_files.zip", "w") as z:  # a zip of something else
        z.writestr("essay/essay.md", "attention is all you need")
    (folder / "no_cell.ipynb").write_text(json.dumps({"cells": [], "metadata": {}, "nbformat": 4,
                                                      "nbformat_minor": 5}))


@pytest.fixture(scope="module")
def graded(tmp_path_factory, root):
    base = tmp_path_factory.mktemp("text")
    folder = base / "submitted"
    broken_class(folder, root)
    out = base / "grades" / "grades.csv"
    proc = subprocess.run([sys.executable, "-m", "autograder.cli", "grade-all", str(folder), "--out", str(out),
                           "--timeout", "5", *[a for s in STAGES for a in ("--stage", s)]],
                          capture_output=True, text=True, timeout=600, cwd=root)
    assert proc.returncode == 0, proc.stderr
    records = {p.stem: json.loads(p.read_text()) for p in (base / "grades" / "grades-results").glob("*.json")}
    return base, records, proc.stderr


def student_text(record):
    """Everything a student may read of a record: the output on top and each test's name and output."""
    return "\n".join([record.get("output", "")] + [f"{t['name']}\n{t['output']}" for t in record["tests"]])


def test_every_broken_submission_gets_a_record(graded):
    _, records, _ = graded
    assert sorted(records) == sorted(["empty", "notes_only", "init_only", "stage1_only", "syntax_error",
                                      "import_error", "corrupt", "wrong_files", "no_cell"])


@pytest.mark.parametrize("student", ["empty", "notes_only", "init_only", "stage1_only", "syntax_error",
                                     "import_error", "corrupt", "wrong_files", "no_cell"])
def test_what_a_student_is_handed_holds_no_path_and_no_instructors_advice(graded, student):
    base, records, _ = graded
    record = records[student]
    whole = json.dumps(record)  # extra_data too: the record is handed back as it is
    for path in (str(base), "/tmp/", "/root", "attention-lab-"):
        assert path not in whole, f"{student}'s record holds {path!r}:\n{whole[:2000]}"
    text = student_text(record)
    for advice in INSTRUCTOR_ONLY:
        assert advice not in text, f"{student}'s record says {advice!r}:\n{text[:2000]}"


def test_what_is_missing_is_said_in_the_students_terms(graded):
    _, records, _ = graded
    by_stage = {}
    for t in records["stage1_only"]["tests"]:
        by_stage.setdefault(t["name"].split(":")[0], []).append(t["output"])
    assert all(o == "stage 2 (self_attention.py) was not handed in" for o in by_stage["Stage 2"]), by_stage["Stage 2"]
    assert any("stage 3 (causal.py) was not handed in" in o for o in by_stage["Stage 3"])
    assert "nothing was handed in" in records["empty"]["output"] or "no attention_lab/ folder" in \
        records["empty"]["output"]
    syntax = [t["output"] for t in records["syntax_error"]["tests"] if t["name"].startswith("Stage 3")]
    assert any("causal.py" in o and "line 1" in o for o in syntax), syntax
    assert "could not be unpacked" in records["corrupt"]["output"] or "cannot be unpacked" in \
        records["corrupt"]["output"]


def test_the_instructors_log_keeps_the_detail(graded):
    base, _, log = graded
    assert f"empty: {base / 'submitted' / 'empty'}" in log  # where it looked
    assert "corrupt: corrupt.zip cannot be unpacked" in log
