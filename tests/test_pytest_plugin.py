"""The hidden checks as pytest items (``autograder.delivery.pytest_plugin``): one item per check,
verdicts from the isolated grader only, and nothing a submission ships (a conftest.py) changes them.
Each case runs pytest in a child process, as a CI grader would (forked from one that has imported torch
and pytest, ``tests/forked.py``: the plugin's work is the point, not the start-up); most grade stages 1
and 3 only."""
import os
import shutil
import subprocess
import time
import xml.etree.ElementTree as ET

import pytest

from autograder.grading.registry import all_checks
from autograder.grading.results import GRADER_ERROR
from tests.forked import ForkedPython

STAGES = (1, 3)
PLUGIN = "autograder.delivery.pytest_plugin"


def pytest_run(root, cwd, *args, submission=None, stages=STAGES, prelude=None, one_word=True):
    """pytest with the plugin in a child, in ``cwd``; ``prelude``: Python run in that child first;
    ``one_word``: ``--submission=PATH`` as the docs advise, else ``--submission PATH``."""
    opts = ([f"--submission={submission}"] if one_word else ["--submission", str(submission)]) if submission else []
    opts += [f"--stage={s}" for s in stages] if submission is not None else []
    argv = ["-p", PLUGIN, "-p", "no:cacheprovider", "-o", "console_output_style=classic", *opts, *args]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(root), os.environ.get("PYTHONPATH")]))}
    env.pop("PYTEST_ADDOPTS", None)
    env.pop("ATTENTION_LAB_CONFIG", None)
    run = ForkedPython(f"{prelude or ''}\nimport sys, pytest\nsys.exit(pytest.main({argv!r}))", cwd=cwd, env=env)
    code, stdout = run.result(timeout=300)
    return subprocess.CompletedProcess(argv, code, stdout, run.stderr)


def checks_of(stages=STAGES):
    return all_checks(set(stages))


def test_the_reference_passes_every_check_and_junit_xml_carries_the_points(root, tmp_path):
    proc = pytest_run(root, tmp_path, "--junit-xml", "out.xml", submission=root / "solutions", one_word=False)
    checks = checks_of()
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert f"{len(checks)} passed" in proc.stdout
    total = sum(c.points for c in checks)
    assert f"attention-lab: {total}/{total} points" in proc.stdout
    cases = ET.parse(tmp_path / "out.xml").getroot().iter("testcase")
    props = {case.get("name"): {p.get("name"): p.get("value") for p in case.iter("property")} for case in cases}
    assert list(props) == [c.id for c in checks]
    assert all(props[c.id] == {"stage": str(c.stage), "max_points": str(c.points), "points": str(c.points)}
               for c in checks)


def test_the_stubs_fail_every_check_with_its_feedback(root, tmp_path):
    proc = pytest_run(root, tmp_path, "-v", submission=root / "assignments")
    checks = checks_of()
    assert proc.returncode == 1
    assert f"{len(checks)} failed" in proc.stdout and " passed" not in proc.stdout.splitlines()[-1]
    assert proc.stdout.count("not implemented yet") >= len(checks)
    assert f"attention-lab: 0/{sum(c.points for c in checks)} points" in proc.stdout
    assert "Traceback" not in proc.stdout and "pytest_plugin.py" not in proc.stdout  # the verdict, not the plugin


def test_a_marker_or_a_keyword_selects_checks_and_only_their_stages_are_graded(root, tmp_path):
    stage3 = [c.id for c in checks_of() if c.stage == 3]
    proc = pytest_run(root, tmp_path, "-v", "-m", "stage3", submission=root / "assignments")
    ran = [line.split()[0] for line in proc.stdout.splitlines() if line.endswith(" FAILED")]
    assert ran == [f"attention-lab::{i}" for i in stage3], proc.stdout
    assert f"{len(checks_of()) - len(stage3)} deselected" in proc.stdout and "(stage(s) 3)" in proc.stdout

    proc = pytest_run(root, tmp_path, "--collect-only", "-q", "-k", "no_leak", submission=root / "assignments")
    listed = [line for line in proc.stdout.splitlines() if line.startswith("attention-lab::")]
    assert listed == [f"attention-lab::{c.id}" for c in checks_of() if "no_leak" in c.id] and listed, proc.stdout


def test_x_stops_after_the_first_failure(root, tmp_path):
    proc = pytest_run(root, tmp_path, "-x", submission=root / "assignments", stages=(1,))
    assert proc.returncode == 1
    assert "1 failed" in proc.stdout and "stopping after 1 failures" in proc.stdout


def test_collect_only_lists_the_checks_and_grades_nothing(root, tmp_path):
    started = time.monotonic()
    proc = pytest_run(root, tmp_path, "--collect-only", "-q", submission=root / "assignments")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    listed = [line for line in proc.stdout.splitlines() if line.startswith("attention-lab::")]
    assert listed == [f"attention-lab::{c.id}" for c in checks_of()]
    assert "grading" not in proc.stdout + proc.stderr
    assert time.monotonic() - started < 60  # no child, no submission opened: a few seconds of imports


def test_a_submission_that_cannot_be_graded_fails_every_check_with_one_line(root, tmp_path):
    proc = pytest_run(root, tmp_path, submission=tmp_path / "missing")
    assert proc.returncode == 1
    assert f"{len(checks_of())} failed" in proc.stdout and "missing: no such file or directory" in proc.stdout
    assert "Traceback" not in proc.stdout


def test_a_grader_that_cannot_run_errors_every_check(root, tmp_path):
    prelude = ("import autograder.grading.grade as g\nfrom autograder.errors import GradingError\n"
               "def broken(*a, **k):\n    raise GradingError('the fork server did not start')\ng.grade = broken")
    proc = pytest_run(root, tmp_path, submission=root / "solutions", stages=(1,), prelude=prelude)
    assert proc.returncode == 1
    assert f"{len(checks_of({1}))} errors" in proc.stdout
    assert "not the submission's fault: the fork server did not start" in proc.stdout


def test_a_check_the_grader_failed_on_fails_saying_it_is_the_graders_fault(root, tmp_path):
    prelude = ("import autograder.grading.grade as g\nreal = g.grade\ndef flaky(*a, **k):\n    graded = real(*a, **k)\n"
               "    graded.results[0].status = 'error'\n    return graded\ng.grade = flaky")
    proc = pytest_run(root, tmp_path, submission=root / "solutions", stages=(1,), prelude=prelude)
    first = checks_of({1})[0]
    assert proc.returncode == 1
    assert f"1 failed, {len(checks_of({1})) - 1} passed" in proc.stdout
    assert f"FAILED attention-lab::{first.id}" in proc.stdout and GRADER_ERROR in proc.stdout


HOSTILE_CONFTEST = '''
import pytest

@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    report = outcome.get_result()
    report.outcome, report.longrepr = "passed", None

def pytest_collection_modifyitems(items):
    del items[:]
'''


@pytest.fixture
def hostile(root, make_submission):
    """The reference with stage 3's stubs, and a conftest.py that passes every test and drops them all."""
    folder = make_submission()
    shutil.copy(root / "assignments" / "attention_lab" / "causal.py", folder / "attention_lab" / "causal.py")
    (folder / "conftest.py").write_text(HOSTILE_CONFTEST)
    return folder


@pytest.mark.parametrize("where", ["elsewhere", "in the submission"])
def test_a_submitted_conftest_changes_nothing(root, tmp_path, hostile, where):
    inside = where == "in the submission"  # where a student runs it: `--submission .`
    proc = pytest_run(root, hostile if inside else tmp_path, "-v", submission="." if inside else hostile,
                      one_word=not inside)
    stage3 = [c for c in checks_of() if c.stage == 3]
    assert proc.returncode == 1
    assert f"collected {len(checks_of())} items" in proc.stdout
    assert f"{len(stage3)} failed, {len(checks_of()) - len(stage3)} passed" in proc.stdout
    assert all(f"attention-lab::{c.id} FAILED" in proc.stdout for c in stage3)


def test_the_hostile_conftest_is_hostile_without_the_plugin(root, hostile):
    (hostile / "test_fails.py").write_text("def test_fails():\n    assert False\n")
    proc = pytest_run(root, hostile)
    assert proc.returncode == 5 and "deselected" not in proc.stdout  # the conftest dropped the failing test


def test_a_pytest_configuration_read_from_the_submission_is_refused(root, tmp_path, hostile):
    (hostile / "pytest.ini").write_text("[pytest]\naddopts = -k nothing\n")
    proc = pytest_run(root, hostile, "--collect-only", submission=hostile)
    assert proc.returncode == 4
    assert "pytest read its configuration from the submission" in proc.stderr


def test_without_a_submission_the_plugin_changes_nothing(root, tmp_path):
    (tmp_path / "test_tiny.py").write_text("def test_tiny():\n    assert True\n")
    proc = pytest_run(root, tmp_path, "-q")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "1 passed" in proc.stdout and "attention-lab" not in proc.stdout
