"""The public checks in a stage's notebook: a cell per check, each asserting what that check says,
so that nbgrader's Validate, which runs a notebook and reports the cells that fail, fails a notebook
whose public checks fail, in the checks' own sentences ("row 3 of your attention weights sums to
0.7100 ..."). The cells are worth 0 points: the hidden checks at the end of the notebook grade.

A cell calls ``verdict(file, test)`` and asserts on it. The first cell run after the code changed runs
every check of that file at once, in a fresh Python (pytest, as a student runs them, so that they see
the saved ``attention_lab/``, not an earlier import, and a check that crashes takes no kernel with it);
the other cells read its results. pytest's JUnit XML report says what each check said.

nbgrader's autograde (``NBGRADER_EXECUTION=autograde``) runs nothing here: there only the grade cells
count, and the checks' own process, importing torch and pytest, was a third of each notebook's time.

Only the standard library and ``feedback`` here: the build copies this file beside the public checks,
and it runs in the student's kernel.
"""
from __future__ import annotations

import hashlib
import os
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ElementTree
from pathlib import Path

try:
    from .feedback import wrapped
except ImportError:  # beside the public checks, where feedback.py is a module of its own
    from feedback import wrapped  # type: ignore[no-redef]

# What nbgrader's autograde sets in the kernel it runs a notebook in; the course's cells test it too.
AUTOGRADE_VARIABLE, AUTOGRADE = "NBGRADER_EXECUTION", "autograde"
NOT_RUN = "Not run while autograding: the grade cells below decide the points. Run it yourself to see {what}."

# nbgrader's Validate prints a failed cell's error indented by 4 and cuts each line at 87 characters; the
# error's first line follows "AssertionError: ".
WIDTH, RAISED = 80, len("AssertionError: ")

Report = dict[str, tuple[bool, str]]  # test -> (passed, what it said)
_reports: dict[tuple[str, str], Report] = {}  # (test file, the code checked) -> its report


def autograding() -> bool:
    return os.environ.get(AUTOGRADE_VARIABLE) == AUTOGRADE


def verdict(file: str, test: str, folder: str | os.PathLike[str] = ".") -> tuple[bool, str]:
    """``(passed, what the check said)`` for the public check ``test`` of ``file`` (``tests/...py``, in
    ``folder``, beside ``attention_lab/``). A passed or skipped check says so on the cell's output."""
    if autograding():
        print(NOT_RUN.format(what="what this check says"))
        return True, ""
    report = _report(Path(folder), file)
    found = [said for name, said in report.items() if name == test or name.startswith(f"{test}[")]
    if not found:
        why = report.get("", (False, f"{file} has no check named {test}: is this notebook older than tests/?"))[1]
        return False, wrapped(why, WIDTH, RAISED)
    failed = [said for passed, said in found if not passed]
    if failed:
        return False, wrapped("\n".join(failed), WIDTH, RAISED)
    print("\n".join(said for _, said in found))
    return True, ""


def _report(folder: Path, file: str) -> Report:
    key = (file, _fingerprint(folder))
    if key not in _reports:
        with tempfile.TemporaryDirectory() as tmp:
            xml = Path(tmp) / "report.xml"
            ran = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", f"--junitxml={xml}",
                                  file], cwd=folder, capture_output=True, text=True)
            if not xml.is_file():
                said = (ran.stdout + ran.stderr).strip().splitlines()
                return {"": (False, "the public checks did not run: " + (said[-1] if said else f"exit status "
                                                                                              f"{ran.returncode}"))}
            _reports[key] = _read(xml)
    return _reports[key]


def _read(xml: Path) -> Report:
    """test -> (passed, what it said), from pytest's JUnit XML: a failure's or an error's message (a
    public check fails with its sentence alone), a skip's reason, "passed" otherwise."""
    found: Report = {}
    for case in ElementTree.parse(xml).iter("testcase"):
        name = case.get("name", "")
        outcome = next((child for child in case if child.tag in ("failure", "error", "skipped")), None)
        if outcome is None:
            found[name] = (True, f"passed: {name}")
        elif outcome.tag == "skipped":
            found[name] = (True, f"skipped: {outcome.get('message', '')}")
        else:
            message = outcome.get("message") or (outcome.text or "").strip()
            found[name] = (False, message.removeprefix("Failed: "))  # pytest.fail's own word for a failure
    return found


def _fingerprint(folder: Path) -> str:
    """The code checked: a module cell run again (another stage's, too) means checking again."""
    digest = hashlib.sha256()
    for path in sorted((folder / "attention_lab").glob("*.py")):
        digest.update(path.name.encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()
