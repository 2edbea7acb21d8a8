"""The public self-checks in assignments/tests: they pass on the reference, fail on the stubs
with "not implemented yet" and no traceback, select by stage marker, run from a bare copy of
the student's folder, and contain none of the hidden graders."""
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from autograder.authoring.build import SHARED_WITH_STUDENTS
from autograder.curriculum import STAGES as REGISTERED

ROOT = Path(__file__).resolve().parent.parent
PUBLIC = ROOT / "assignments" / "tests"
SOLUTIONS = ROOT / "solutions"
ENV_VAR = "ATTENTION_LAB_SUBMISSION"
STAGES = sorted(REGISTERED)  # every stage the kit grades has public checks
HIDDEN = ("golden", "jacobian", "known_weights", "state_dict", "leak_report", "dropout_report", "autograder")


class PytestRun:
    """``python -m pytest ARGS -p no:cacheprovider`` in a subprocess, started at once so that
    the runs (each mostly importing torch) overlap; ``result()`` waits: (exit code, output)."""

    def __init__(self, *args, cwd=ROOT, submission=None):
        env = {k: v for k, v in os.environ.items() if k not in (ENV_VAR, "PYTEST_ADDOPTS", "PYTEST_PLUGINS")}
        env["PYTHONDONTWRITEBYTECODE"] = "1"  # leave no __pycache__ in the student's folder
        if submission is not None:
            env[ENV_VAR] = str(submission)
        self.proc = subprocess.Popen([sys.executable, "-m", "pytest", *args, "-p", "no:cacheprovider"], cwd=cwd,
                                     env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        self._result = None

    def result(self):
        if self._result is None:
            try:
                output, _ = self.proc.communicate(timeout=300)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                output, _ = self.proc.communicate()
            self._result = self.proc.returncode, output
        return self._result


def count(output, word):
    """N from the summary line's "N passed" / "N failed" / "N deselected" (0 when absent)."""
    found = re.findall(rf"(\d+) {word}", output.strip().splitlines()[-1]) if output.strip() else []
    return int(found[0]) if found else 0


def failure_sections(output):
    """{test name: the text pytest printed for its failure}, from the FAILURES section."""
    sections, name = {}, None
    for line in output.splitlines():
        header = re.fullmatch(r"_+ (test_\w+) _+", line)
        if header:
            name = header.group(1)
            sections[name] = []
        elif line.startswith("====="):
            name = None
        elif name is not None:
            sections[name].append(line)
    return {k: "\n".join(v) for k, v in sections.items()}


def stage_of(node_id):
    found = re.search(r"test_stage(\d+)_\w+\.py::", node_id)
    return int(found.group(1)) if found else None


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """Every subprocess this file needs, all started before the first one is waited for."""
    copy = tmp_path_factory.mktemp("student") / "lab"  # a bare copy of the student's folder
    shutil.copytree(PUBLIC, copy / "tests", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copytree(SOLUTIONS / "attention_lab", copy / "attention_lab", ignore=shutil.ignore_patterns("__pycache__"))
    no_package = tmp_path_factory.mktemp("no_package")
    stage3 = ("--collect-only", "-q", "-m", "stage3")
    started = {
        "reference": PytestRun("assignments/tests", "-q", "-rA", submission=SOLUTIONS),
        "stubs": PytestRun("assignments/tests", "-q"),
        "stage3 from repo root": PytestRun("assignments", *stage3, submission=SOLUTIONS),
        "stage3 from assignments": PytestRun(*stage3, cwd=ROOT / "assignments", submission=SOLUTIONS),
        "copy": PytestRun(cwd=copy),  # no pyproject.toml there: pytest's default import mode
        "no package": PytestRun("assignments/tests", "-q", submission=no_package),
    }
    started["copy"].folder = copy
    yield started
    for run in started.values():
        if run.proc.poll() is None:
            run.proc.kill()
            run.proc.wait()


@pytest.fixture(scope="module")
def reference_ids(runs):
    _, output = runs["reference"].result()
    return re.findall(r"^PASSED (\S+::test_\w+)", output, flags=re.M)


def test_public_checks_pass_on_the_reference(runs, reference_ids):
    code, output = runs["reference"].result()
    assert code == 0, output
    assert count(output, "passed") == len(reference_ids) > 0, output
    assert "failed" not in output.splitlines()[-1] and "error" not in output.splitlines()[-1], output
    assert "PytestUnknownMarkWarning" not in output, output


def test_every_stage_has_a_few_public_checks(reference_ids):
    per_stage = {s: sum(stage_of(i) == s for i in reference_ids) for s in STAGES}
    assert all(n >= 4 for n in per_stage.values()), per_stage
    assert sum(per_stage.values()) == len(reference_ids), reference_ids  # every check lives in a stage file


def test_every_public_check_fails_on_the_stubs_with_not_implemented_yet_and_no_traceback(runs, reference_ids):
    code, output = runs["stubs"].result()
    assert code == 1, output
    assert count(output, "failed") == len(reference_ids), output
    assert count(output, "passed") == 0 and count(output, "error") == 0, output
    sections = failure_sections(output)
    assert len(sections) == len(reference_ids), output
    for name, text in sections.items():
        assert re.search(r"not implemented yet: \S+ \(attention_lab/\w+\.py line \d+\)", text), f"{name}:\n{text}"
    assert "Traceback" not in output and "During handling" not in output, output
    assert not re.search(r"^E\s", output, flags=re.M), output  # pytest's traceback lines


@pytest.mark.parametrize("where", ["repo root", "assignments"])
def test_stage_marker_selects_only_that_stage(where, runs, reference_ids):
    code, output = runs[f"stage3 from {where}"].result()
    assert code == 0, output
    selected = re.findall(r"^\S+::test_\w+$", output, flags=re.M)
    stage3 = [i for i in reference_ids if stage_of(i) == 3]
    assert selected and all(stage_of(i) == 3 for i in selected), output
    assert len(selected) == len(stage3), output
    assert count(output, "deselected") == len(reference_ids) - len(stage3), output
    assert "PytestUnknownMarkWarning" not in output and "Unknown pytest.mark" not in output, output


def test_a_bare_copy_of_the_student_folder_checks_its_own_attention_lab(runs, reference_ids):
    folder = runs["copy"].folder
    code, output = runs["copy"].result()
    assert code == 0, output
    assert count(output, "passed") == len(reference_ids), output
    assert f"checking attention_lab in {(folder / 'attention_lab').resolve()}" in output, output


def test_a_submission_folder_without_attention_lab_is_a_usage_error(runs):
    code, output = runs["no package"].result()
    assert code == pytest.ExitCode.USAGE_ERROR, output
    assert ENV_VAR in output and "Traceback" not in output, output


def test_public_checks_are_marked_by_stage_and_hold_none_of_the_hidden_graders():
    shared = {Path(name).name for name in SHARED_WITH_STUDENTS}  # generated from the kit's public modules
    files = sorted(p for p in PUBLIC.glob("*.py") if p.name not in shared)
    for stage in STAGES:
        stage_files = list(PUBLIC.glob(f"test_stage{stage}_*.py"))
        assert len(stage_files) == 1, f"stage {stage}: {stage_files}"
        assert f"pytestmark = pytest.mark.stage{stage}\n" in stage_files[0].read_text()
    for path in files:
        text = path.read_text().lower()
        for word in HIDDEN:
            assert word not in text, f"{path.name} mentions {word!r}: hidden checks stay in autograder/"
