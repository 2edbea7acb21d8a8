"""The zoo: wrong implementations the graders must catch, correct ones they must accept.

Every file under ``tests/zoo/wrong/`` and ``tests/zoo/correct/`` is a fragment of student
code. Its module-level constants say where it goes and what must happen:

- ``MODULE``: the ``attention_lab`` module the fragment is appended to (a copy of the
  reference in ``solutions/``); the fragment redefines one function or class there.
- ``LOSES`` (wrong/ only): the check ids that name the bug; each of them must fail.
- ``HELPERS`` (optional): code of ``tests/zoo/helpers/`` that several entries share, added before the entry
  (``renamed``: the adapter of public model code to the contract's names).
- ``MENTIONS`` (optional): text the feedback of the first ``LOSES`` check must contain, or a dict, check ->
  text, for an entry whose cause every check it costs must name.
- ``ONLY`` (optional, wrong/ only): when True, every check outside ``LOSES`` must pass: the bug
  costs points where it is and nowhere else (e.g. one probe's input edited in place must not
  spoil the inputs of the next probes). A later stage's end-to-end checks (``Check.end_to_end``:
  stage 10's model runs the student's own attention) are the one exception: they may fail too (and
  an entry that lists them in ``LOSES`` may ask, in ``MENTIONS``, that they name the earlier part).

Only the stages the fragment can affect are graded: the module's own stage, plus stage 4
for ``causal`` (the multi-head wrapper is built from ``CausalAttention``).

``tests/zoo/seeds/`` holds the seed documents' own code, typed in as printed, wherever it fits a
stage's contract (names it uses differently are mapped, in lines outside the printed code that say
so). Each must get full marks but for ``DIFFERS``: check id -> text its feedback must contain, one
entry per way the printed code departs from the contract, which the feedback explains. The seeds'
own bugs are wrong entries, named ``seed_*``.

The hostile entries (``tests/zoo/hostile/``) are graded by ``test_zoo_hostile.py``.
"""
from __future__ import annotations

from pathlib import Path

import pytest

from autograder.curriculum import STAGE_OF, stages_using
from autograder.grading.grade import grade
from autograder.grading.registry import all_checks, registry
from tools.zoo import CORRECT, SEEDS, WRONG, assemble, read_entry, summary


def grade_entry(path: Path, tmp_path: Path, server):
    """The entry's constants and its results, graded by ``server``: the session's (``grading_server``), since
    these entries attack nothing (the hostile ones get a server per way of grading, as root and as a user,
    in test_zoo_hostile.py). No check may hit the grader's own error on any entry (a grader error is never
    the student's loss, and never a verdict the zoo could call caught)."""
    entry = read_entry(path)
    graded = grade(assemble(path, entry, tmp_path), stages=stages_using(entry["MODULE"]), server=server)
    assert not graded.grader_errors, f"{path.stem}: the grader failed on {[e[0] for e in graded.grader_errors]}"
    return entry, graded.results


@pytest.mark.parametrize("path", WRONG, ids=[p.stem for p in WRONG])
def test_wrong_entry_is_caught(path, tmp_path, grading_server):
    entry, results = grade_entry(path, tmp_path, grading_server)
    by_id = {r.id: r for r in results}
    escaped = [c for c in entry["LOSES"] if by_id[c].passed]
    assert not escaped, (f"{path.stem} ({entry['doc']}) passed {escaped}, which should catch it.\n"
                         f"All checks:\n{summary(results)}")
    if entry["ONLY"]:
        checks = registry()
        collateral = [r.id for r in results if not r.passed and r.id not in entry["LOSES"]
                      and not (checks[r.id].end_to_end and checks[r.id].stage != STAGE_OF[entry["MODULE"]])]
        assert not collateral, f"{path.stem} also lost {collateral}:\n{summary(results)}"
    score, top = sum(r.points for r in results), sum(r.max_points for r in results)
    assert score < top, f"{path.stem} got full marks ({score}/{top})"
    wrapper = [r.id for r in results if "'inner." in r.feedback or "Output has" in r.feedback
               or "SelfAttend" in r.feedback or "WithMemory" in r.feedback]
    assert not wrapper, f"{path.stem}: the probes' own wrapper is named to the student in {wrapper}"
    mentions = entry["MENTIONS"]
    if isinstance(mentions, str):
        mentions = {entry["LOSES"][0]: mentions}
    for check, text in (mentions or {}).items():  # the cause, named in every check the entry names
        assert check in entry["LOSES"], f"{path.stem}: MENTIONS names {check}, which is not among its LOSES"
        assert text in by_id[check].feedback, (
            f"{path.stem}: the feedback of {check} does not mention {text!r}:\n{by_id[check].feedback}")


@pytest.mark.parametrize("path", CORRECT, ids=[p.stem for p in CORRECT])
def test_correct_entry_gets_full_marks(path, tmp_path, grading_server):
    entry, results = grade_entry(path, tmp_path, grading_server)
    failed = [r for r in results if not r.passed]
    assert not failed, (f"{path.stem} ({entry['doc']}) is correct but lost points:\n"
                        + "\n".join(f"  {r.id}: {r.feedback}" for r in failed))


@pytest.mark.parametrize("path", SEEDS, ids=[p.stem for p in SEEDS])
def test_seed_code_gets_full_marks_but_for_its_documented_differences(path, tmp_path, grading_server):
    entry, results = grade_entry(path, tmp_path, grading_server)
    differs = entry["DIFFERS"]
    lost = {r.id: r.feedback for r in results if not r.passed and r.id not in differs}
    assert not lost, f"{path.stem} ({entry['doc']}) is the seeds' own code, yet lost:\n{summary(results)}"
    by_id = {r.id: r for r in results}
    for check_id, why in differs.items():
        assert not by_id[check_id].passed, f"{path.stem}: {check_id} passed; its DIFFERS entry is stale"
        assert why in by_id[check_id].feedback, (
            f"{path.stem}: the feedback of {check_id} does not say why the contract differs ({why!r}):\n"
            f"{by_id[check_id].feedback}")


def test_zoo_is_big_enough():
    assert len(WRONG) >= 25, f"only {len(WRONG)} wrong entries"
    assert len(CORRECT) >= 8, f"only {len(CORRECT)} correct entries"


@pytest.mark.parametrize("path", WRONG + CORRECT + SEEDS,
                         ids=[f"{p.parent.name}/{p.stem}" for p in WRONG + CORRECT + SEEDS])
def test_entry_is_well_formed(path):
    entry = read_entry(path)
    assert entry["doc"], f"{path.stem} needs a docstring saying what it does"
    assert entry["MODULE"] in STAGE_OF, f"{path.stem}: MODULE {entry['MODULE']!r} is not one of {sorted(STAGE_OF)}"
    registry = {c.id: c for c in all_checks()}
    if path.parent.name == "wrong":
        assert entry["LOSES"], f"{path.stem} must list the checks that catch it"
        unknown = [c for c in entry["LOSES"] if c not in registry]
        assert not unknown, f"{path.stem}: unknown check ids {unknown}"
        graded = stages_using(entry["MODULE"])
        outside = [c for c in entry["LOSES"] if registry[c].stage not in graded]
        assert not outside, f"{path.stem}: {outside} are not in the graded stages {sorted(graded)}"
    else:
        assert not (entry["LOSES"] or entry["MENTIONS"] or entry["ONLY"]), f"{path.stem} is correct: no LOSES etc."
        assert set(entry["DIFFERS"]) <= set(registry), f"{path.stem}: unknown check ids in DIFFERS"
        assert path.parent.name == "seeds" or not entry["DIFFERS"], f"{path.stem}: only the seeds' code DIFFERS"
