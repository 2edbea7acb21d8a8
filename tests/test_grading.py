"""Grading end to end: reference, stubs, and submissions broken in ways that must not stop grading."""
import json
import subprocess
import sys

import pytest

from autograder.curriculum import STAGES
from autograder.errors import SubmissionError
from autograder.grading.grade import grade
from autograder.grading.registry import all_checks, max_points


def by_id(results):
    return {r.id: r for r in results}


@pytest.fixture(scope="module")
def reference(root):
    return grade(root / "solutions").results


@pytest.fixture(scope="module")
def stubs(root):
    return grade(root / "assignments").results


def test_reference_gets_full_marks(reference):
    failed = {r.id: r.feedback for r in reference if not r.passed}
    assert not failed
    assert sum(r.points for r in reference) == max_points()
    assert {r.id for r in reference} == {c.id for c in all_checks()}


def test_stubs_get_zero_and_say_not_implemented(stubs):
    assert sum(r.points for r in stubs) == 0
    for r in stubs:
        assert r.feedback.startswith("not implemented yet"), (r.id, r.feedback)


def test_syntax_error_names_file_and_line_and_other_stages_still_grade(make_submission, root):
    text = (root / "solutions" / "attention_lab" / "causal.py").read_text().replace(
        "num_tokens = x.shape[1]\n", "num_tokens = x.shape[1\n", 1)
    results = by_id(grade(make_submission(causal=text), stages={1, 2, 3, 5}).results)
    feedback = results["s3.causal.seeded"].feedback
    assert "could not import attention_lab/causal.py" in feedback and "causal.py line" in feedback, feedback
    assert all(r.passed for r in results.values() if r.stage in (1, 2, 5))


def test_import_error_is_reported(make_submission):
    results = grade(make_submission(simple="import no_such_module\n"), stages={1}).results
    assert all("ModuleNotFoundError" in r.feedback and "simple.py line 1" in r.feedback for r in results)


@pytest.mark.parametrize("bad", ["does-not-exist", "empty"])
def test_missing_or_malformed_submission(tmp_path, bad):
    path = tmp_path / bad
    if bad == "empty":
        (path / "attention_lab").mkdir(parents=True)
    with pytest.raises(SubmissionError):
        grade(path)


def test_cli_reference_full_marks_and_gradescope_json(root, tmp_path):
    out = tmp_path / "r.json"
    proc = subprocess.run([sys.executable, "-m", "autograder.cli", "grade", str(root / "solutions"), "--json", str(out)],
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert f"Total {max_points()}/{max_points()} points" in proc.stdout
    for n in STAGES:
        assert f"Stage {n}" in proc.stdout
    data = json.loads(out.read_text())
    assert data["score"] == max_points()
    assert len(data["tests"]) == len(all_checks())
    for t in data["tests"]:
        assert set(t) >= {"name", "score", "max_score", "output", "visibility"}
        assert t["visibility"] in ("visible", "hidden", "after_due_date", "after_published")
        assert t["score"] == t["max_score"]


def test_cli_stubs_zero_exit_zero(root):
    proc = subprocess.run([sys.executable, "-m", "autograder.cli", "grade", str(root / "assignments")],
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0
    assert f"Total 0/{max_points()} points" in proc.stdout
    assert "not implemented yet" in proc.stdout


@pytest.mark.parametrize("args", [["grade", "no/such/folder"], ["grade", "README.md"]])
def test_cli_bad_submission_exits_nonzero_with_message(root, args):
    proc = subprocess.run([sys.executable, "-m", "autograder.cli", *args], capture_output=True, text=True,
                          cwd=root, timeout=60)
    assert proc.returncode == 2
    assert proc.stderr.strip().splitlines()[-1].startswith("attention-lab: ")
    assert "Traceback" not in proc.stderr


def test_every_check_is_accounted_for_even_without_a_result(monkeypatch, root):
    """A check whose observation never came back fails with a message; none is silently dropped."""
    from autograder.grading import grade as grading

    real = grading.run_tasks

    def lose_one(submission, tasks, **kwargs):
        run = real(submission, tasks, **kwargs)
        del run.observations[next(t for t in run.observations if t.kind == "probe")]
        return run

    monkeypatch.setattr(grading, "run_tasks", lose_one)
    results = grade(root / "solutions", stages={1}).results
    assert len(results) == len(all_checks({1}))
    lost = [r for r in results if not r.passed]
    assert len(lost) == 1 and lost[0].feedback == "no result came back for this check"
