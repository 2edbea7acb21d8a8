"""The zoo: wrong implementations the graders must catch, correct ones they must accept.

Every file under ``tests/zoo/wrong/`` and ``tests/zoo/correct/`` is a fragment of student
code. Its module-level constants say where it goes and what must happen:

- ``MODULE``: the ``attention_lab`` module the fragment is appended to (a copy of the
  reference in ``solutions/``); the fragment redefines one function or class there.
- ``LOSES`` (wrong/ only): the check ids that name the bug; each of them must fail.
- ``MENTIONS`` (optional): text the feedback of the first ``LOSES`` check must contain.
- ``ONLY`` (optional, wrong/ only): when True, every check outside ``LOSES`` must pass: the bug
  costs points where it is and nowhere else (e.g. one probe's input edited in place must not
  spoil the inputs of the next probes).

Only the stages the fragment can affect are graded: the module's own stage, plus stage 4
for ``causal`` (the multi-head wrapper is built from ``CausalAttention``).

``tests/zoo/seeds/`` holds the seed documents' own code, typed in as printed, wherever it fits a
stage's contract (names it uses differently are mapped, in lines outside the printed code that say
so). Each must get full marks but for ``DIFFERS``: check id -> text its feedback must contain, one
entry per way the printed code departs from the contract, which the feedback explains. The seeds'
own bugs are wrong entries, named ``seed_*``.

``tests/zoo/hostile/`` holds attacks on the grader itself, one per file. Their constants:

- ``LOSES``: patterns (``fnmatch``) of the checks the attack must lose; every other graded check
  must pass (the checks it did not attack are graded normally).
- ``MENTIONS``: text that the feedback of at least one lost check must contain.
- ``STAGES``: the stages to grade (default: the module's stage and one it does not touch).
- ``TIMEOUT``: the per-task timeout to grade with (default 3 s); ``BOUND``: the most seconds
  grading may take (default 60).
- ``FILES``: extra files shipped in the submission folder, path -> text.
- ``NEEDS_ROOT``: why the defence needs root; without root the entry is skipped with that reason.
- ``LIMITS``: runner constants to lower for this entry, e.g. ``{"CPU_PER_WALL": 0.25}``.

Each hostile entry is graded twice: as root, where the child drops to an unprivileged user (skipped
with a reason when the tests do not run as root), and as an ordinary user would grade. The word
``LEAKED`` must never appear in feedback: entries raise it when an attack got through. Every
results.json must be well-formed, and the reference graded right after must get full marks.
"""
from __future__ import annotations

import fnmatch
import json
import time
from pathlib import Path

import pytest

from autograder import runner, workspace
from autograder.grade import grade
from autograder.registry import all_checks
from autograder.report import gradescope_results, write_json
from autograder.submission import STAGE_OF
from autograder.zoo import CORRECT, HOSTILE, SEEDS, WRONG, ZOO, assemble, read_entry, stages_for  # noqa: F401



def grade_entry(path: Path, tmp_path: Path):
    entry = read_entry(path)
    results = grade(assemble(path, entry, tmp_path), stages=stages_for(entry["MODULE"])).results
    return entry, results


def summary(results) -> str:
    return "\n".join(f"  {'PASS' if r.passed else 'FAIL'} {r.id}: {r.feedback.splitlines()[0]}" for r in results)


@pytest.mark.parametrize("path", WRONG, ids=[p.stem for p in WRONG])
def test_wrong_entry_is_caught(path, tmp_path):
    entry, results = grade_entry(path, tmp_path)
    by_id = {r.id: r for r in results}
    escaped = [c for c in entry["LOSES"] if by_id[c].passed]
    assert not escaped, (f"{path.stem} ({entry['doc']}) passed {escaped}, which should catch it.\n"
                         f"All checks:\n{summary(results)}")
    if entry["ONLY"]:
        collateral = [r.id for r in results if not r.passed and r.id not in entry["LOSES"]]
        assert not collateral, f"{path.stem} also lost {collateral}:\n{summary(results)}"
    score, top = sum(r.points for r in results), sum(r.max_points for r in results)
    assert score < top, f"{path.stem} got full marks ({score}/{top})"
    if entry["MENTIONS"]:
        first = by_id[entry["LOSES"][0]]
        assert entry["MENTIONS"] in first.feedback, (
            f"{path.stem}: the feedback of {first.id} does not mention {entry['MENTIONS']!r}:\n{first.feedback}")


@pytest.mark.parametrize("path", CORRECT, ids=[p.stem for p in CORRECT])
def test_correct_entry_gets_full_marks(path, tmp_path):
    entry, results = grade_entry(path, tmp_path)
    failed = [r for r in results if not r.passed]
    assert not failed, (f"{path.stem} ({entry['doc']}) is correct but lost points:\n"
                        + "\n".join(f"  {r.id}: {r.feedback}" for r in failed))


@pytest.mark.parametrize("path", SEEDS, ids=[p.stem for p in SEEDS])
def test_seed_code_gets_full_marks_but_for_its_documented_differences(path, tmp_path):
    entry, results = grade_entry(path, tmp_path)
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
        graded = stages_for(entry["MODULE"])
        outside = [c for c in entry["LOSES"] if registry[c].stage not in graded]
        assert not outside, f"{path.stem}: {outside} are not in the graded stages {sorted(graded)}"
    else:
        assert not (entry["LOSES"] or entry["MENTIONS"] or entry["ONLY"]), f"{path.stem} is correct: no LOSES etc."
        assert set(entry["DIFFERS"]) <= set(registry), f"{path.stem}: unknown check ids in DIFFERS"
        assert path.parent.name == "seeds" or not entry["DIFFERS"], f"{path.stem}: only the seeds' code DIFFERS"


# ---------------------------------------------------------------- hostile submissions

def hostile_stages(entry):
    if entry["STAGES"]:
        return set(entry["STAGES"])
    own = STAGE_OF[entry["MODULE"]]
    return {own, 2 if own == 1 else 1}  # plus a stage it does not touch, which must grade normally


MODES = {"as root: child drops to an unprivileged user": True, "as an ordinary user": False}


@pytest.fixture(params=list(MODES), ids=["root", "user"])
def grading_mode(request, monkeypatch):
    as_root = MODES[request.param]
    if as_root and not workspace.is_root():
        pytest.skip("needs root: the child can drop to another user only when grading runs as root")
    if not as_root:  # as root too, grade the way a non-root grader does: no change of user
        monkeypatch.setattr(workspace, "is_root", lambda: False)
    return as_root


@pytest.mark.parametrize("path", HOSTILE, ids=[p.stem for p in HOSTILE])
def test_hostile_entry_is_contained(path, tmp_path, grading_mode, monkeypatch, root):
    entry = read_entry(path)
    if entry["NEEDS_ROOT"] and not grading_mode:
        pytest.skip(f"needs root: {entry['NEEDS_ROOT']}")
    for name, value in entry["LIMITS"].items():
        monkeypatch.setattr(runner, name, value)
    monkeypatch.setenv("ATTENTION_LAB_TEST_SECRET", "LEAKED-through-the-environment")
    stages = hostile_stages(entry)
    start = time.monotonic()
    graded = grade(assemble(path, entry, tmp_path / "sub"), stages=stages, timeout_s=entry["TIMEOUT"])
    elapsed = time.monotonic() - start
    results = graded.results
    assert elapsed < entry["BOUND"], f"{path.stem}: grading took {elapsed:.1f} s, more than {entry['BOUND']} s"
    assert not [r.id for r in results if "LEAKED" in r.feedback], f"{path.stem} got through:\n{summary(results)}"

    attacked = [r for r in results if any(fnmatch.fnmatch(r.id, pat) for pat in entry["LOSES"])]
    unmatched = [pat for pat in entry["LOSES"] if not any(fnmatch.fnmatch(r.id, pat) for r in results)]
    assert not unmatched, f"{path.stem}: LOSES patterns {unmatched} match no graded check"
    escaped = [r.id for r in attacked if r.passed]
    assert not escaped, f"{path.stem} passed {escaped}:\n{summary(results)}"
    collateral = [r.id for r in results if not r.passed and r not in attacked]
    assert not collateral, f"{path.stem} also cost {collateral}, which it did not attack:\n{summary(results)}"
    assert any(entry["MENTIONS"] in r.feedback for r in attacked), (
        f"{path.stem}: no lost check's feedback mentions {entry['MENTIONS']!r}:\n{summary(attacked)}")

    out = tmp_path / "results.json"
    write_json(gradescope_results(results, elapsed), out)
    data = json.loads(out.read_text())
    assert sorted(t["number"] for t in data["tests"]) == sorted(c.id for c in all_checks(stages))
    for t in data["tests"]:
        assert set(t) >= {"name", "score", "max_score", "output", "visibility"}
        assert isinstance(t["score"], (int, float)) and 0 <= t["score"] <= t["max_score"]
    assert data["score"] == sum(r.points for r in results)

    after = grade(root / "solutions", stages=stages).results  # nothing of the attack lingers
    assert all(r.passed for r in after), f"after {path.stem}, the reference lost:\n{summary(after)}"


@pytest.mark.parametrize("path", HOSTILE, ids=[p.stem for p in HOSTILE])
def test_hostile_entry_is_well_formed(path):
    entry = read_entry(path)
    assert entry["doc"], f"{path.stem} needs a docstring saying what it attacks"
    assert entry["MODULE"] in STAGE_OF and entry["LOSES"] and entry["MENTIONS"], path.stem
    assert set(entry["LIMITS"]) <= set(vars(runner)), f"{path.stem}: unknown runner constants"


def test_hostile_zoo_is_big_enough():
    assert len(HOSTILE) >= 20, f"only {len(HOSTILE)} hostile entries"
