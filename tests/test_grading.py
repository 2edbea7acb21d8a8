"""Grading end to end: reference, stubs, and submissions broken in ways that must not stop grading."""
import json
import re
import subprocess
import sys

import pytest
import torch

from autograder.curriculum import STAGES
from autograder.errors import SubmissionError
from autograder.grading.grade import grade
from autograder.grading.registry import all_checks, max_points


def by_id(results):
    return {r.id: r for r in results}


@pytest.fixture(scope="module")
def reference(root, grading_server):
    return grade(root / "solutions", server=grading_server).results


@pytest.fixture(scope="module")
def stubs(root, grading_server):
    return grade(root / "assignments", server=grading_server).results


def test_reference_gets_full_marks(reference):
    failed = {r.id: r.feedback for r in reference if not r.passed}
    assert not failed
    assert sum(r.points for r in reference) == max_points()
    assert {r.id for r in reference} == {c.id for c in all_checks()}


def test_stubs_get_zero_and_say_not_implemented(stubs):
    assert sum(r.points for r in stubs) == 0
    for r in stubs:
        assert r.feedback.startswith("not implemented yet"), (r.id, r.feedback)
        assert r.cause == "untouched", (r.id, r.cause)  # what the table, the class summary and results.json read


def test_syntax_error_names_file_and_line_and_other_stages_still_grade(make_submission, root, grading_server):
    reference = (root / "solutions" / "attention_lab" / "causal.py").read_text()
    text = reference.replace("num_tokens = x.shape[1]", "num_tokens = x.shape[1", 1)  # a bracket left open
    assert text != reference
    results = by_id(grade(make_submission(causal=text), stages={1, 2, 3, 5}, server=grading_server).results)
    feedback = results["s3.causal.seeded"].feedback
    assert "could not import attention_lab/causal.py" in feedback and "causal.py line" in feedback, feedback
    assert all(r.passed for r in results.values() if r.stage in (1, 2, 5))


def test_import_error_is_reported(make_submission, grading_server):
    results = grade(make_submission(simple="import no_such_module\n"), stages={1}, server=grading_server).results
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
    proc = subprocess.run([sys.executable, "-m", "autograder.cli", "grade", str(root / "solutions"),
                           "--json", str(out)], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert f"Total {max_points()}/{max_points()} points" in proc.stdout
    for n in STAGES:
        assert re.search(rf"^Stage +{n}  ", proc.stdout, re.M), n
    data = json.loads(out.read_text())
    assert data["score"] == max_points()
    assert len(data["tests"]) == len(all_checks())
    for t in data["tests"]:
        assert set(t) >= {"name", "score", "max_score", "output", "visibility"}
        assert t["visibility"] in ("visible", "hidden", "after_due_date", "after_published")
        assert t["score"] == t["max_score"]


def test_cli_stubs_zero_exit_zero_one_line_per_stage_not_started(root):
    proc = subprocess.run([sys.executable, "-m", "autograder.cli", "grade", str(root / "assignments")],
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0
    assert f"Total 0/{max_points()} points" in proc.stdout
    lines = [line for line in proc.stdout.strip().splitlines() if not line.startswith("note: ")]  # the machine's
    assert len(lines) == len(STAGES) + 2 and all(line.endswith("not started") for line in lines[:len(STAGES)])
    verbose = subprocess.run([sys.executable, "-m", "autograder.cli", "grade", "--verbose", "--stage", "1",
                              str(root / "assignments")], capture_output=True, text=True, timeout=300)
    assert verbose.stdout.count("not implemented yet") == len(all_checks({1})), verbose.stdout


def test_the_short_table_lists_the_failed_checks_of_stages_worked_on():
    from autograder.delivery.report import render_table
    from autograder.grading.results import FAILED, PASSED, Cause, CheckResult

    def check(stage, n, status, feedback="ok", cause=None):
        return CheckResult(f"s{stage}.c{n}", stage, f"check {n}", 2, status, feedback, "hidden", cause=cause)

    results = [check(1, 1, PASSED), check(1, 2, PASSED),  # done
               check(2, 1, PASSED), check(2, 2, FAILED, "row 3 of your weights sums to 0.71\nmore", Cause.STUDENT),
               check(3, 1, FAILED, "not implemented yet: causal_weights", Cause.UNTOUCHED),  # not started
               check(3, 2, FAILED, "stage 3 (causal.py) was not handed in", Cause.UNTOUCHED)]
    short = render_table(results, 1.0).splitlines()
    assert [line.split()[:2] for line in short[:1]] == [["Stage", "1"]] and not short[1].startswith("    ")
    assert "FAIL s2.c2" in short[2] and short[3].strip() == "row 3 of your weights sums to 0.71"
    assert short[4].startswith("Stage 3") and short[4].endswith("not started")
    assert not [line for line in short if "s2.c1" in line or "s3.c" in line]
    verbose = render_table(results, 1.0, verbose=True)
    assert all(r.id in verbose for r in results) and "not started" not in verbose


@pytest.mark.parametrize("args", [["grade", "no/such/folder"], ["grade", "README.md"],
                                  ["grade", "solutions", "--html", "docs"], ["grade", "solutions", "--json", "docs"]])
def test_cli_bad_submission_exits_nonzero_with_message(root, args):
    proc = subprocess.run([sys.executable, "-m", "autograder.cli", *args], capture_output=True, text=True,
                          cwd=root, timeout=60)
    assert proc.returncode == 2
    assert proc.stderr.strip().splitlines()[-1].startswith("attention-lab: ")
    assert "Traceback" not in proc.stderr


@pytest.mark.parametrize("args", [["grade", "solutions"], ["grade-all", "submitted", "--out", "g.csv"],
                                  ["nbgrader", "import", "course"]])
def test_grading_elsewhere_than_linux_stops_with_a_sentence(monkeypatch, capsys, args):
    from autograder import cli

    monkeypatch.setattr(sys, "platform", "darwin")
    assert cli.main(args) == 1
    said = capsys.readouterr().err
    assert "grading needs Linux, and this is darwin" in said and "WSL 2" in said and "Traceback" not in said


def test_every_check_is_accounted_for_even_without_a_result(monkeypatch, root, grading_server):
    """A check whose observation never came back fails with a message; none is silently dropped."""
    from autograder.grading import grade as grading

    real = grading.run_tasks

    def lose_one(submission, tasks, **kwargs):
        run = real(submission, tasks, **kwargs)
        del run.observations[next(t for t in run.observations if t.kind == "probe")]
        return run

    monkeypatch.setattr(grading, "run_tasks", lose_one)
    results = grade(root / "solutions", stages={1}, server=grading_server).results
    assert len(results) == len(all_checks({1}))
    lost = [r for r in results if not r.passed]
    # "[cpu] no result ..." where the check also ran, and passed, on cuda
    assert len(lost) == 1 and lost[0].feedback.endswith("no result came back for this check")


def test_a_hidden_comparison_says_how_far_off_in_bands_never_the_expected_value():
    """With the student's own output, an exact difference would give the hidden value away: an
    output of zeros would be "off by" exactly the expected entry."""
    from autograder.public.feedback import describe_mismatch

    hidden = torch.tensor([[0.7391, -0.2], [0.1, 0.5]])
    said = describe_mismatch(torch.zeros(2, 2), hidden, "out", atol=1e-5, rtol=0, reveal=False)
    assert "off by up to the largest expected value" in said and "4 of 4 entries" in said
    assert not re.findall(r"\d\.\d", said.replace("0.1%", "")), said  # no number that could be an expected value
    close = describe_mismatch(hidden + 0.004, hidden, "out", atol=1e-5, rtol=0, reveal=False)
    assert "off by less than 1% of the largest expected value" in close


@pytest.mark.parametrize("form, verdict", [
    ("the book's float32 constant", None),
    ("exact", "is the exact GELU"),
    ("sigmoid", "is the sigmoid approximation"),
])
def test_gelus_tolerance_lets_a_float32_constant_through_and_names_the_other_formulas(form, verdict):
    """s10.gelu on 41 float64 values (docs/checks.md): the book's torch.sqrt(torch.tensor(2.0 / torch.pi))
    is float32 and puts the outputs off by up to 7e-9, the exact and sigmoid forms by 4.7e-4 and 2e-2."""
    import torch.nn.functional as F

    from autograder.grading.grade import judge
    from autograder.grading.registry import registry
    from autograder.grading.results import FAILED, PASSED
    from autograder.probes.stage10 import GELU_X

    def gelu(x):
        return {"the book's float32 constant": lambda: 0.5 * x * (1 + torch.tanh(
                    torch.sqrt(torch.tensor(2.0 / torch.pi)) * (x + 0.044715 * torch.pow(x, 3)))),
                "exact": lambda: F.gelu(x),
                "sigmoid": lambda: x * torch.sigmoid(1.702 * x)}[form]()

    obs = {"gelu": gelu(GELU_X.double()), "gelu_float32": gelu(GELU_X)}
    result = judge(registry()["s10.gelu"], obs, None, "cpu")
    if verdict is None:
        assert result.status == PASSED, result.text
    else:
        assert result.status == FAILED and verdict in result.text, result.text


def test_device_agreement_counts_each_side_of_a_check():
    """tools/device_agreement (run on a GPU machine) splits a check's points by where it passed."""
    from autograder.grading.results import PASSED, CheckResult
    from tools.device_agreement import compare

    def check(devices):
        return CheckResult("s1.c", 1, "c", 2, PASSED if all(v == PASSED for v in devices.values()) else "failed",
                           "", "hidden", {}, devices)

    both = check({"cpu": PASSED, "cuda": PASSED})
    gpu_only_fail = check({"cpu": PASSED, "cuda": "failed"})
    moved = check({"meta": "failed", "cuda": "failed"})
    cpu_only = check({"cpu": PASSED})
    totals = compare([both, gpu_only_fail, moved, cpu_only])
    assert (totals["cpu"], totals["cuda"], totals["max"]) == (6, 4, 8)
    assert list(totals["differs"]) == ["s1.c"] and totals["on_cuda"] == 3


@pytest.mark.parametrize("terminal", [True, False], ids=["terminal", "pipe"])
def test_grade_shows_progress_stage_by_stage_on_a_terminal_only_and_times_the_whole_command(
        root, monkeypatch, capsys, terminal):
    """On a terminal `grade` redraws one line as tasks are done, stage by stage, and clears it before the table;
    on a pipe it says nothing more than before. "graded in" is the command's own time, its start included."""
    import time

    from autograder.cli import main

    monkeypatch.setattr(sys.stderr, "isatty", lambda: terminal)
    monkeypatch.setattr("autograder.grading.grade.missing_devices_note", lambda checks, devices: "")
    started = time.monotonic()
    assert main(["grade", str(root / "solutions"), "--stage", "1", "--stage", "3"]) == 0
    took = time.monotonic() - started
    out, err = capsys.readouterr()
    shown = re.findall(r"stage (\d+), (\d+) of (\d+) tasks done", err)
    if terminal:
        assert {stage for stage, _, _ in shown} == {"1", "3"} and shown[-1][1] == shown[-1][2], shown
        assert [int(done) for _, done, _ in shown] == sorted(int(done) for _, done, _ in shown)
        last = err.rindex("tasks done")
        assert "\r\033[K" in err[last:err.index("isolation:")], "the progress line was left under what follows"
    else:
        assert not shown and "\033" not in err
    said = float(re.search(r"graded in (\d+\.\d) s", out).group(1))
    assert said >= 0.9 * round(took, 1) - 0.1, (said, took)


def test_a_device_this_machine_lacks_is_said_once_for_the_grading_not_in_every_check(root, grading_server):
    from autograder.grading.grade import missing_devices_note

    graded = grade(root / "solutions", stages={3}, devices={"cpu", "meta"}, server=grading_server)
    said = [n for n in graded.notes if "not available" in n]
    assert said == ["cuda is not available here: the checks that also run on cuda where it is ran on cpu, meta alone"]
    assert not [r.id for r in graded.results if "not available" in r.feedback]
    assert all(r.feedback.startswith("passed (checked on ") for r in graded.results)
    checks = all_checks({3})
    assert missing_devices_note(checks, {"cpu", "meta", "cuda"}) == ""
