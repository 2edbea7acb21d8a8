"""The hostile zoo: attacks on the grader itself, one per file in ``tests/zoo/hostile/``.

Their constants:

- ``LOSES``: patterns (``fnmatch``) of the checks the attack must lose; every other graded check
  must pass (the checks it did not attack are graded normally).
- ``MENTIONS``: text that the feedback of at least one lost check must contain (a tuple: any of them,
  where the layer that stops it differs between machines).
- ``FLAGGED``: text a finding of the source review (``flagged_for_review``) must contain: for an attack
  that nothing inside the process can tell from honest code, whose last layer is the instructor (its
  ``LOSES`` may then be empty: it may earn no more than the same code flagged where it was always read).
- ``STAGES``: the stages to grade (default: the module's stage and one it does not touch).
- ``TIMEOUT``: the per-task timeout to grade with (default 3 s); ``BOUND``: the most seconds
  grading may take (default 60).
- ``FILES``: extra files shipped in the submission folder, path -> text.
- ``LINKS``: symbolic links in the submission, name -> target (replacing what is there).
- ``PLANT``: files written outside the submission before grading (a classmate's work, the course's
  source, the gradebook, a file in the grader's home), path -> text or [text, mode]; removed after.
- ``LEAVES``: paths the attack tries to create outside its sandbox: none may exist after grading.
- ``REFUSED``: the submission must not be graded at all; the student's message says this.
- Paths may use the words of ``tools.zoo.places``: @KIT@, @BESIDE@, @PARENT@, @HOME@, @TMP@, @SITE@.
- ``NEEDS_KERNEL``: why only the kernel (Landlock, or a root of its own) stops the attack; where this
  machine gives graded code neither, the entry is skipped with that reason, and fails instead when
  ``ATTENTION_LAB_ISOLATION_TESTS=required`` (as CI sets it).
- ``LIMITS``: runner constants to lower for this entry, e.g. ``{"CPU_PER_WALL": 0.25}``.

Each hostile entry is graded twice: as root, where the child drops to an unprivileged user (skipped
with a reason when the tests do not run as root), and as an ordinary user would grade. The word
``LEAKED`` must never appear in feedback: entries raise it when an attack got through. Every
results.json must be well-formed, and the reference graded right after must get full marks.
"""
from __future__ import annotations

import fnmatch
import json
import os
import time
from pathlib import Path

import pytest

from autograder.curriculum import STAGE_OF
from autograder.delivery.report import write_json
from autograder.errors import SubmissionError
from autograder.grading.grade import grade
from autograder.grading.registry import all_checks
from autograder.sandbox import runner, workspace
from autograder.sandbox.forkserver import ForkServer
from tools.zoo import HOSTILE, assemble, placed, places, plant, read_entry, summary

ISOLATION_REQUIRED = os.environ.get("ATTENTION_LAB_ISOLATION_TESTS") == "required"


def needs_kernel_isolation(why):
    """Skip (or, where the isolation tests are required, fail) when graded code here is not confined
    by the kernel."""
    missing = runner.kernel_isolation()
    if missing:
        (pytest.fail if ISOLATION_REQUIRED else pytest.skip)(f"{why}; and {missing}")


def hostile_stages(entry):
    if entry["STAGES"]:
        return set(entry["STAGES"])
    own = STAGE_OF[entry["MODULE"]]
    return {own, 2 if own == 1 else 1}  # plus a stage it does not touch, which must grade normally


@pytest.fixture(scope="class")
def server(request):
    """One fork server for every attack graded one way (``AS_ROOT`` of the class): as root, where
    the child drops to an unprivileged user, or as an ordinary user would grade. Each attack is
    followed by the reference, graded by the same server: nothing of an attack may linger, in the
    grading process or in the server, for the reference or for the next attack."""
    as_root = request.cls.AS_ROOT
    if as_root and not workspace.is_root():
        pytest.skip("needs root: the child can drop to another user only when grading runs as root")
    with pytest.MonkeyPatch.context() as patch:
        if not as_root:  # as root too, grade the way a non-root grader does: no change of user
            patch.setattr(workspace, "is_root", lambda: False)
        with ForkServer(meta=True) as started:
            yield started


# Two classes, not one parametrised test, so that the two ways of grading are two units of work
# for the parallel test runner (each takes a few minutes).
class TestAsRoot:
    AS_ROOT = True

    @pytest.mark.parametrize("path", HOSTILE, ids=[p.stem for p in HOSTILE])
    def test_hostile_entry_is_contained(self, path, tmp_path, monkeypatch, root, server):
        contained(path, tmp_path, monkeypatch, root, server)

    def test_the_kit_is_hidden_from_the_child_not_locked_on_disk(self, tmp_path, monkeypatch, root, server):
        """As root, the child cannot read the kit because its root of its own does not hold it; the
        instructor's checkout keeps its permissions (chmod 700 is the fallback of a machine with
        no mount namespace, which says so)."""
        if not workspace.children_own_root():
            pytest.skip("this machine gives the grader no mount namespace: it falls back to chmod 700, and says so")
        modes = lambda: {p: p.stat().st_mode & 0o7777 for p in workspace.secrets()}  # noqa: E731
        before = modes()
        for stem in ("reads_solutions", "reads_golden_natively"):
            contained(next(p for p in HOSTILE if p.stem == stem), tmp_path / stem, monkeypatch, root, server)
        assert modes() == before, "grading as root changed the permissions of the instructor's checkout"


class TestAsUser:
    AS_ROOT = False

    @pytest.mark.parametrize("path", HOSTILE, ids=[p.stem for p in HOSTILE])
    def test_hostile_entry_is_contained(self, path, tmp_path, monkeypatch, root, server):
        contained(path, tmp_path, monkeypatch, root, server)


def contained(path, tmp_path, monkeypatch, root, server):
    entry = read_entry(path)
    if entry["NEEDS_KERNEL"]:
        needs_kernel_isolation(entry["NEEDS_KERNEL"])
    for name, value in entry["LIMITS"].items():
        monkeypatch.setattr(runner, name, value)
    monkeypatch.setenv("ATTENTION_LAB_TEST_SECRET", "LEAKED-through-the-environment")
    stages = hostile_stages(entry)
    folder = tmp_path / "sub"
    leaves = [Path(placed(p, places(folder))) for p in entry["LEAVES"]]
    assert not [p for p in leaves if os.path.lexists(p)], f"{path.stem}: left over from an earlier run: {leaves}"
    planted = plant(entry, folder)
    try:
        attacked_by(path, entry, assemble(path, entry, folder), stages, tmp_path, server)
    finally:
        for spot in planted:
            spot.unlink(missing_ok=True)
        left = [p for p in leaves if os.path.lexists(p)]
        for spot in left:
            spot.unlink()
    assert not left, f"{path.stem} wrote {[str(p) for p in left]} outside its sandbox"
    after = grade(root / "solutions", stages=stages, server=server).results  # nothing of the attack lingers
    assert all(r.passed for r in after), f"after {path.stem}, the reference lost:\n{summary(after)}"


def attacked_by(path, entry, submission, stages, tmp_path, server):
    """Grade the attack; it must lose what it attacked, and nothing else, within its bound."""
    start = time.monotonic()
    if entry["REFUSED"]:
        with pytest.raises(SubmissionError) as refused:
            grade(submission, stages=stages, timeout_s=entry["TIMEOUT"], server=server)
        assert entry["REFUSED"] in refused.value.student and "LEAKED" not in str(refused.value), path.stem
        return
    graded = grade(submission, stages=stages, timeout_s=entry["TIMEOUT"], server=server)
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
    if entry["LOSES"]:
        mentions = (entry["MENTIONS"],) if isinstance(entry["MENTIONS"], str) else entry["MENTIONS"]
        assert any(m in r.feedback for r in attacked for m in mentions), (
            f"{path.stem}: no lost check's feedback mentions {entry['MENTIONS']!r}:\n{summary(attacked)}")
    if entry["FLAGGED"]:
        assert any(entry["FLAGGED"] in found for found in graded.flagged), (path.stem, graded.flagged)
    assert not [n for n in graded.notes if "LEAKED" in n], graded.notes
    assert "LEAKED" not in json.dumps(graded.isolation) and "ABI 99" not in json.dumps(graded.isolation)

    out = tmp_path / "results.json"
    write_json(graded.gradescope(), out)
    data = json.loads(out.read_text())
    assert sorted(t["number"] for t in data["tests"]) == sorted(c.id for c in all_checks(stages))
    for t in data["tests"]:
        assert set(t) >= {"name", "score", "max_score", "output", "visibility"}
        assert isinstance(t["score"], (int, float)) and 0 <= t["score"] <= t["max_score"]
    assert data["score"] == sum(r.points for r in results)
    assert {t["extra_data"]["isolation"] for t in data["tests"]} == {graded.isolation["files"]}


@pytest.mark.parametrize("path", HOSTILE, ids=[p.stem for p in HOSTILE])
def test_hostile_entry_is_well_formed(path):
    entry = read_entry(path)
    assert entry["doc"], f"{path.stem} needs a docstring saying what it attacks"
    assert entry["MODULE"] in STAGE_OF and (entry["LOSES"] and entry["MENTIONS"] or entry["FLAGGED"]), path.stem
    assert set(entry["LIMITS"]) <= set(vars(runner)), f"{path.stem}: unknown runner constants"


def test_hostile_zoo_is_big_enough():
    assert len(HOSTILE) >= 20, f"only {len(HOSTILE)} hostile entries"
