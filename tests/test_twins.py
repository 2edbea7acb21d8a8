"""A check's twin (``Check.twin``): the student's code run again holding the kit's own part where it calls
another the student wrote (stage 10's models the kit's attention, of the same weights; stage 1's
``context_vectors_all`` the kit's ``attention_weights_all``), only where the check failed on a run that
completed. Its verdict says which part the mistake is in.

The zoo shows the feedback on wrong entries (``weights_all_softmax_dim0``, ``mha_scaled_by_d_out``,
``s8_cache_mask_top_left``, ``s10_no_attention_shortcut``). These show what makes that feedback true, and what
it costs: each twin of the reference passes its check (so "with the kit's part in place of yours, this passes" can be
believed), a grading that passes runs no twin, and a run that crashed or raised is not run again.
"""
from __future__ import annotations

import dataclasses

import pytest

from autograder.curriculum import modules_for
from autograder.grading import grade as grading
from autograder.grading.golden import load_golden
from autograder.grading.grade import failed_twins, judge, twin_plan, worst_case
from autograder.grading.registry import all_checks
from autograder.grading.results import FAILED, PASSED
from autograder.intake.submission import open_submission
from autograder.public.feedback import problem
from autograder.sandbox.protocol import Task

from tools.zoo import assemble, read_entry

from .conftest import ROOT

TWINNED = [c for c in all_checks() if c.twin]


def test_every_end_to_end_check_has_a_twin():
    assert {c.id for c in all_checks() if c.end_to_end} == {
        "s10.gpt.causal", "s10.gpt.trained", "s10.gpt.writes", "s10.cached.model"}
    assert {c.id for c in TWINNED} == {c.id for c in all_checks() if c.end_to_end} | {"s1.context_vectors_all"}


@pytest.fixture(scope="module")
def reference_twins():
    tasks = [Task("import", m) for m in modules_for({1, 10})] + [Task("probe", c.twin, "cpu") for c in TWINNED]
    return grading.run_plan(open_submission(ROOT / "solutions"), tasks).observations


@pytest.mark.parametrize("check", TWINNED, ids=[c.id for c in TWINNED])
def test_the_reference_holding_the_kits_attention_passes(check, reference_twins):
    twin = reference_twins[Task("probe", check.twin, "cpu")]
    verdict = judge(check, twin, load_golden().get(check.probe), "cpu")
    assert verdict.status == PASSED, verdict.text


def test_a_grading_that_passes_runs_no_twin(monkeypatch, grading_server):
    runs = []
    real = grading.run_plan
    monkeypatch.setattr(grading, "run_plan", lambda sub, tasks, **options: runs.append(tasks) or real(
        sub, tasks, **options))
    graded = grading.grade(ROOT / "solutions", stages={10}, server=grading_server)
    assert all(r.passed for r in graded.results)
    assert len(runs) == 1 and not any(t.name.endswith(".twin") for t in runs[0])


def test_a_twin_runs_only_after_a_completed_run_that_failed(reference_observations):
    golden = load_golden()
    trained = next(c for c in TWINNED if c.id == "s10.gpt.trained")
    own = Task("probe", trained.probe, "cpu")
    passing = reference_observations[own]
    wrong = {**passing, "logits": passing["logits"] + 1}
    raised = {**passing, "tokens": {"error": problem("Timeout", "the call did not return in time")}}
    assert failed_twins([trained], {"cpu"}, {own: passing}, golden) == []
    assert failed_twins([trained], {"cpu"}, {own: wrong}, golden) == [(trained, Task("probe", trained.twin, "cpu"))]
    assert judge(trained, raised, golden[trained.probe], "cpu").status == FAILED
    assert failed_twins([trained], {"cpu"}, {own: raised}, golden) == []  # a hang is not asked for twice
    # the second round imports what the twins' stage needs, then runs them
    assert twin_plan([trained], [(trained, Task("probe", trained.twin, "cpu"))]) == [
        *[Task("import", m) for m in modules_for({10})], Task("probe", trained.twin, "cpu")]


def test_the_twin_verdict_names_the_part_and_never_changes_the_points(reference_observations):
    golden = load_golden()["s10.gpt.trained"]
    trained = next(c for c in TWINNED if c.id == "s10.gpt.trained")
    passing = reference_observations[Task("probe", trained.probe, "cpu")]
    wrong = {**passing, "logits": passing["logits"] + 1}
    theirs = judge(trained, wrong, golden, "cpu", twin=passing)
    assert theirs.status == FAILED
    assert "this passes: the mistake is in your MultiHeadAttention (stage 4); look there first" in theirs.text
    ours = judge(trained, wrong, golden, "cpu", twin=wrong).text
    assert "this still fails, so there is a mistake in this stage's code" in ours
    for silent in ({"logits": {"error": problem("ProbeError", "a block did not call its att")}}, {"logits": "odd"}):
        said = judge(trained, wrong, golden, "cpu", twin=silent)  # a twin that did not complete says nothing
        assert said.status == FAILED and "in place of yours" not in said.text, said
    # a passing check is not touched by its twin, whatever the twin says
    assert judge(trained, passing, golden, "cpu", twin=wrong).status == PASSED
    # nor is a failing one made "not measured" on cuda by a twin that met another device (the hostile zoo's
    # s10_twin_raises_a_device_mismatch, whose cuda half this machine may not have): the twin is read apart
    mismatch = {"logits": {"error": problem("RuntimeError", "Expected all tensors to be on the same device")}}
    assert judge(trained, wrong, golden, "cuda", twin=mismatch).status == FAILED


def test_the_worst_case_of_a_grading_counts_its_twins():
    stage10 = [c for c in all_checks() if c.stage == 10]
    untwinned = [dataclasses.replace(c, twin="") for c in stage10]
    assert worst_case(stage10, {"cpu"}) > worst_case(untwinned, {"cpu"})


def test_a_twin_whose_part_is_never_called_says_nothing(tmp_path, grading_server):
    """context_vectors_all that computes its weights itself (wrongly), never calling attention_weights_all: its
    twin, with the kit's attention_weights_all, would fail too, but the mistake is not "in context_vectors_all
    itself" for that reason. The twin refuses (the kit's part was not called), and nothing is added."""
    fragment = tmp_path / "inline.py"
    fragment.write_text('MODULE = "simple"\n\n\ndef context_vectors_all(inputs):\n'
                        '    return torch.softmax(inputs @ inputs.T, dim=0) @ inputs\n')
    graded = grading.grade(assemble(fragment, read_entry(fragment), tmp_path / "sub"), stages={1},
                           server=grading_server)
    (result,) = [r for r in graded.results if r.id == "s1.context_vectors_all"]
    assert not result.passed and "in place of yours" not in result.feedback, result.feedback
