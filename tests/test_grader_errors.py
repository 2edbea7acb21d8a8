"""A bug in a judge is the grader's: that check alone is marked for a regrade, every other check is
graded, results are written, the student reads no traceback, and the instructor is told."""
import csv
import dataclasses
import html
import json
import shutil

import pytest

from autograder import cli
from autograder.delivery.classrun import grade_all as grade_all_module
from autograder.delivery.classrun.grade_all import grade_all
from autograder.grading.grade import available_devices, grade
from autograder.grading.registry import Fail, all_checks, max_points, registry
from autograder.grading.results import ERROR, GRADER_ERROR

BROKEN = "s1.scores"


def break_judge(monkeypatch, when=lambda obs: True):
    """Replace the judge of BROKEN with one that has a bug (it divides by zero) ``when`` it sees an
    observation it likes; it fails the check normally otherwise."""
    check = registry()[BROKEN]

    def buggy(obs, golden):
        if when(obs):
            return 1 / 0
        raise Fail("wrong scores")

    monkeypatch.setitem(registry(), BROKEN, dataclasses.replace(check, judge=buggy))


def test_a_judge_bug_is_the_graders_error_of_that_check_alone(monkeypatch, root, grading_server):
    break_judge(monkeypatch)
    graded = grade(root / "solutions", stages={1}, server=grading_server)
    by_id = {r.id: r for r in graded.results}
    assert by_id[BROKEN].status == ERROR and by_id[BROKEN].points == 0
    assert by_id[BROKEN].feedback == GRADER_ERROR  # no traceback, no exception, nothing of the kit
    assert all(r.passed for r in graded.results if r.id != BROKEN)
    assert graded.regrade == [BROKEN]
    # once per device the check ran on (cpu, and cuda where there is one)
    assert [(c, d) for c, d, _ in graded.grader_errors] == [(BROKEN, d) for d in registry()[BROKEN].devices
                                                             if d in available_devices()]
    check_id, device, trace = graded.grader_errors[0]
    assert check_id == BROKEN and device == "cpu" and "ZeroDivisionError" in trace and "Traceback" in trace


def test_grade_writes_every_check_says_so_and_exits_with_its_own_status(monkeypatch, root, tmp_path, capsys):
    break_judge(monkeypatch)
    out = tmp_path / "results.json"
    assert cli.main(["grade", str(root / "solutions"), "--stage", "1", "--json", str(out)]) == cli.Exit.GRADER_ERRORS
    said = capsys.readouterr()
    assert "ZeroDivisionError" in said.err and "grader error in s1.scores on cpu" in said.err
    assert "ERR " in said.out and "The grader failed on 1 check(s)" in said.out
    assert "ZeroDivisionError" not in said.out
    data = json.loads(out.read_text())
    assert sorted(t["number"] for t in data["tests"]) == sorted(c.id for c in all_checks({1}))
    test = next(t for t in data["tests"] if t["number"] == BROKEN)
    isolation = data["extra_data"]["isolation"]["files"]  # every check states what confined it
    assert test["status"] == "failed"
    assert test["extra_data"] == {"grader_error": True, "cause": "grader", "isolation": isolation}
    assert test["output"] == GRADER_ERROR and data["extra_data"]["regrade"] == [BROKEN]
    assert data["score"] == max_points(1) - registry()[BROKEN].points


def rows(out):
    with open(out, newline="") as f:
        return {r["student"]: r for r in csv.DictReader(f)}


def test_grade_all_keeps_the_other_points_marks_the_row_and_a_fixed_kit_regrades_only_it(monkeypatch, root,
                                                                                       tmp_path, capsys):
    folder = tmp_path / "class"
    for name in ("ann", "ben"):
        shutil.copytree(root / "solutions" / "attention_lab", folder / name / "attention_lab")
    wrong = folder / "ben" / "attention_lab" / "simple.py"  # ben's scores are wrong: negated
    wrong.write_text(wrong.read_text() + "\n\n_scores = attention_scores\n\n\ndef attention_scores(inputs, query):\n"
                     "    return -_scores(inputs, query)\n")
    break_judge(monkeypatch, when=lambda obs: float(obs["book"][0]) > 0)  # ann's right scores meet the bug
    out, log = tmp_path / "grades.csv", []
    assert grade_all(folder, out, stages=[1], log=log.append) == 1  # one student needs attention
    first = rows(out)
    assert first["ann"]["total"] == str(max_points(1) - registry()[BROKEN].points)  # her other points are kept
    assert "grader error in s1.scores" in first["ann"]["problem"] and first["ben"]["problem"] == ""
    assert "ann: grader error in s1.scores on cpu" in capsys.readouterr().err  # for the instructor, with the trace
    record = json.loads((tmp_path / "grades-results" / "ann.json").read_text())
    assert record["extra_data"]["regrade"] == [BROKEN] and "Traceback" not in json.dumps(record)
    assert "marked for a regrade" in (tmp_path / "grades.txt").read_text()
    ben_record = tmp_path / "grades-results" / "ben.json"
    ben_graded = ben_record.stat().st_mtime_ns

    monkeypatch.undo()  # the kit is fixed: a new version of it
    monkeypatch.setattr(grade_all_module, "kit_fingerprint", lambda: "a fixed kit")
    log.clear()
    assert grade_all(folder, out, stages=[1], log=log.append, keep_records=True) == 0
    assert any("1 already graded, 1 to grade" in line for line in log)
    assert ben_record.stat().st_mtime_ns == ben_graded  # ben's record is the earlier kit's, kept
    fixed = rows(out)
    assert fixed["ann"]["total"] == str(max_points(1)) and fixed["ann"]["problem"] == ""
    assert fixed["ben"] == first["ben"]

    log.clear()  # without --keep-records a new kit grades everyone again
    monkeypatch.setattr(grade_all_module, "kit_fingerprint", lambda: "yet another kit")
    assert grade_all(folder, out, stages=[1], log=log.append) == 0
    assert any("0 already graded, 2 to grade" in line for line in log)


def test_the_zeros_placeholder_is_graded_and_loses_only_what_it_must(make_submission, root, tmp_path):
    """The issue's report: a CausalAttention whose forward returns zeros of the right shape took the
    whole grading down (a judge did arithmetic on an empty selection). It is now a plain failure."""
    causal = (root / "solutions" / "attention_lab" / "causal.py").read_text()
    placeholder = causal + ("\n\nclass CausalAttention(CausalAttention):\n    def forward(self, x):\n"
                            "        return torch.zeros(*x.shape[:-1], self.W_value.out_features)\n")
    out = tmp_path / "results.json"
    assert cli.main(["grade", str(make_submission(causal=placeholder)), "--stage", "3", "--json", str(out)]) == 0
    tests = {t["number"]: t for t in json.loads(out.read_text())["tests"]}
    said = " ".join(html.unescape(tests["s3.causal.dropout"]["output"]).split())  # wrapped in HTML with its pictures
    assert "every attention weight came out 0" in said
    assert tests["s3.mask_fill"]["status"] == "passed" and tests["s3.causal.mask_buffer"]["status"] == "passed"
    assert not [t for t in tests.values() if set(t.get("extra_data", {})) - {"isolation", "cause"}]  # no grader error
    assert {t["extra_data"].get("cause") for t in tests.values() if t["status"] == "failed"} == {"student"}


@pytest.mark.parametrize("observation", [None, {"book": None}, {"book": [1, 2]}, {}])
def test_an_observation_unlike_the_references_fails_in_the_students_terms(observation):
    from autograder.grading.grade import judge
    from autograder.grading.results import FAILED

    verdict = judge(registry()["s1.scores"], observation, {"extra": None}, "cpu")
    assert verdict.status == FAILED and verdict.text and "Traceback" not in verdict.text


def test_a_tensor_left_on_the_cpu_costs_a_numeric_check_nothing_on_cuda_only():
    """The same code, the same points with or without a GPU: a numeric check whose code could not run
    on CUDA for a tensor made on the CPU is not measured there (the device checks, on meta, judge that);
    a device check is judged on CUDA as ever, and the CPU's verdict stands."""
    from autograder.grading.grade import combine, judge
    from autograder.grading.results import FAILED, NOT_MEASURED, PASSED
    from autograder.public.feedback import problem

    refused = {"out": {"error": problem("RuntimeError", "expected self and mask to be on the same device, "
                                        "but got mask on cpu and self on cuda:0")}}
    numeric, moves = registry()["s3.mask_fill"], registry()["s3.causal.device"]
    assert judge(numeric, refused, None, "cuda").status == NOT_MEASURED
    assert judge(numeric, refused, None, "cpu").status == FAILED
    assert judge(moves, refused["out"], None, "cuda").status == FAILED
    assert judge(numeric, refused["out"], None, "cuda").status == NOT_MEASURED
    other = {"out": {"error": problem("RuntimeError", "shape mismatch")}}
    assert judge(numeric, other, None, "cuda").status == FAILED
    on_cpu = dataclasses.replace(judge(numeric, refused, None, "cuda"))
    passed = combine(numeric, {"cpu": type(on_cpu)(PASSED), "cuda": on_cpu})
    assert passed.passed and passed.devices == {"cpu": PASSED, "cuda": NOT_MEASURED}
    assert passed.feedback.startswith("passed (checked on cpu)") and "not measured on cuda" in passed.feedback
