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
"""
from __future__ import annotations

import ast
import shutil
from pathlib import Path

import pytest

from autograder.grade import grade
from autograder.registry import STAGES, all_checks

ROOT = Path(__file__).resolve().parents[1]
SOLUTIONS = ROOT / "solutions" / "attention_lab"
ZOO = Path(__file__).resolve().parent / "zoo"
STAGE_OF = {s.module: s.number for s in STAGES.values()}


def read_entry(path: Path) -> dict:
    """The fragment's docstring and constants, read without running it (it needs its module)."""
    tree = ast.parse(path.read_text(), filename=str(path))
    entry = {"doc": ast.get_docstring(tree), "MODULE": None, "LOSES": [], "MENTIONS": None, "ONLY": False}
    for node in tree.body:
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            name = node.targets[0].id
            if name in ("MODULE", "LOSES", "MENTIONS", "ONLY"):
                entry[name] = ast.literal_eval(node.value)
    return entry


def stages_for(module: str) -> set[int]:
    return {STAGE_OF[module]} | ({4} if module == "causal" else set())


WRONG = sorted((ZOO / "wrong").glob("*.py"))
CORRECT = sorted((ZOO / "correct").glob("*.py"))


def grade_entry(path: Path, tmp_path: Path):
    entry = read_entry(path)
    package = tmp_path / "attention_lab"
    shutil.copytree(SOLUTIONS, package, ignore=shutil.ignore_patterns("__pycache__"))
    target = package / f"{entry['MODULE']}.py"
    target.write_text(target.read_text() + f"\n\n# ---- zoo entry {path.stem} ----\n" + path.read_text())
    results, _ = grade(tmp_path, stages=stages_for(entry["MODULE"]))
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


def test_zoo_is_big_enough():
    assert len(WRONG) >= 25, f"only {len(WRONG)} wrong entries"
    assert len(CORRECT) >= 8, f"only {len(CORRECT)} correct entries"


@pytest.mark.parametrize("path", WRONG + CORRECT, ids=[f"{p.parent.name}/{p.stem}" for p in WRONG + CORRECT])
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
