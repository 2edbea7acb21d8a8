"""``attention-lab nbgrader import``: the trusted grades, in nbgrader's gradebook.

``nbgrader autograde`` runs each notebook in a Jupyter kernel and its grade cells in that same
kernel, after the student's code: a student's cell can change what the grade cells report. Import
grades the submitted notebooks as ``attention-lab grade`` does (read as text, run in the isolated
runner; in parallel and resumably, with ``grade-all``'s records), then runs nbgrader's own
autograde with ``TrustedOutputs`` in place of its kernel: every grade cell gets the output of its
trusted verdict, and nbgrader makes the submission rows, scores the cells and writes the autograded
notebooks as it always does. So formgrader, ``generate_feedback`` and ``export`` show the trusted
grades, and no kernel ever runs a student's notebook.
"""
from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from pathlib import Path

from ...errors import GradingError, UsageError
from ..classrun.grade_all import Entry, grade_all
from ..report import printable
from .pipelines import AUTOGRADE, RECORDS, SANITIZE


def import_grades(course_dir, assignment, config, jobs=None, timeout_s=None, log=None):
    """Grade ``submitted/*/<assignment>/`` of the course and put the grades in its gradebook.
    Returns (students the grader failed on, in whole or in some checks; the CSV with stage columns)."""
    log = log or (lambda text: print(text, file=sys.stderr, flush=True))
    if importlib.util.find_spec("nbgrader") is None:  # before grading anyone: nbgrader writes the gradebook
        raise UsageError("nbgrader is not installed beside this Python: pip install -e '.[nbgrader]' (in the kit's "
                         "checkout), then run the same command again")
    course = Path(course_dir).expanduser().resolve()
    submitted = course / "submitted"
    if not (course / "gradebook.db").is_file() or not submitted.is_dir():
        raise UsageError(f"{course} is not an nbgrader course with submissions: it needs gradebook.db (made by "
                         "`nbgrader generate_assignment`) and submitted/ (made by `nbgrader collect`)")
    entries = [Entry(p.name, p / assignment) for p in sorted(submitted.iterdir()) if (p / assignment).is_dir()]
    if not entries:
        raise UsageError(f"no student in {submitted} has handed in {assignment!r}")
    work = course / "attention-lab"
    out, records = work / f"{assignment}-grades.csv", work / f"{assignment}-records"
    log(f"grading {len(entries)} submission(s) of {assignment!r} in the isolated runner")
    failed = grade_all(submitted, out, json_dir=records, jobs=jobs, timeout_s=timeout_s, log=log, config=config,
                       entries=entries)
    log("writing the grades into nbgrader's gradebook (nbgrader autograde, with no kernel)")
    command = [sys.executable, "-m", "nbgrader", "autograde", assignment, "--force", "--create",
               f"--Autograde.autograde_preprocessors={AUTOGRADE!r}", f"--Autograde.sanitize_preprocessors={SANITIZE!r}"]
    proc = subprocess.run(command, cwd=course, env={**os.environ, RECORDS: str(records)}, capture_output=True,
                          text=True)
    said = (proc.stdout + proc.stderr).strip().splitlines()
    if proc.returncode != 0:
        raise GradingError("nbgrader autograde failed while importing the grades:\n" + "\n".join(said[-30:]))
    warnings = [line for line in said if "[WARNING]" in line or "[ERROR]" in line]
    for line in warnings[:20]:
        log(f"nbgrader: {printable(line)}")  # its lines name students, whose names are data
    return failed, out
