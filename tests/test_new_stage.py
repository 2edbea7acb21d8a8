"""docs/instructors/new-stage.md, followed to the letter: its files written into a copy of the kit, its
curriculum row added, the kit built, and the new stage graded (reference, stub, a wrong solution) and
self-checked. What the guide says is the whole of adding a stage: no file outside the stage's own but
the curriculum is touched, and the kit's own stages grade as before.

The guide's stage is stage 11. Where the kit has a stage 11 of its own, the copy gives the guide's stage the
next free number, as an instructor would, and every number here follows the registry."""
from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from autograder.authoring.new_stage import CURRICULUM, row_adder
from autograder.curriculum import STAGES
from autograder.grading.registry import max_points

ROOT = Path(__file__).resolve().parent.parent
GUIDE = ROOT / "docs" / "instructors" / "new-stage.md"
BLOCK = re.compile(r"^```python (file|row)=(\S+)\n(.*?)^```$", re.M | re.S)
GUIDES_NUMBER = 11
NUMBER = GUIDES_NUMBER if GUIDES_NUMBER not in STAGES else max(STAGES) + 1  # the guide's stage, in the copy
KITS_POINTS = sum(max_points(s) for s in STAGES)


def renumbered(text: str) -> str:
    """The guide's stage 11 as stage ``NUMBER``: in its paths (``stage11``), check ids (``s11.``) and rows."""
    return re.sub(rf"(?<=stage){GUIDES_NUMBER}(?!\d)|(?<=\bs){GUIDES_NUMBER}(?=\.)|(?<![\w.]){GUIDES_NUMBER}(?!\d)",
                  str(NUMBER), text)


def guide_blocks(number=True):
    """(kind, path, text) of each file and row the guide gives, in its order; as stage ``NUMBER`` unless
    ``number`` is False (as the guide prints them)."""
    found = [(m.group(1), m.group(2), m.group(3)) for m in BLOCK.finditer(GUIDE.read_text())]
    return [(kind, renumbered(path), renumbered(text)) for kind, path, text in found] if number else found


def test_the_guide_gives_the_stage_files_and_one_curriculum_row():
    blocks = guide_blocks(number=False)
    files = [path for kind, path, _ in blocks if kind == "file"]
    assert files == ["solutions/attention_lab/alibi.py", "autograder/probes/stage11.py",
                     "autograder/grading/checks/stage11.py", "assignments/tests/test_stage11_alibi.py",
                     "tests/zoo/wrong/s11_alibi_slopes_remembered.py",
                     "tests/zoo/correct/s11_alibi_slopes_by_exponent.py"]
    assert [path for kind, path, _ in blocks if kind == "row"] == [CURRICULUM]
    numbered = [path for kind, path, _ in guide_blocks() if kind == "file"]
    assert not [p for p in numbered if (ROOT / p).exists()], "the guide's stage, numbered, must be new to the kit"


def test_a_stage_number_given_twice_is_refused_with_a_sentence():
    from autograder.curriculum import Stage, numbered

    with pytest.raises(ValueError, match="stage 3 is in the curriculum twice .* the next free number, 4"):
        numbered(STAGES[1], STAGES[2], STAGES[3], Stage(3, "alibi", "attention with linear biases", "slopes"))
    with pytest.raises(ValueError, match="module 'simple' is in the curriculum twice"):
        numbered(STAGES[1], Stage(2, "simple", "again", "the same module"))


def copied_kit(copy: Path) -> Path:
    """A copy of the kit's files at ``copy``: those git tracks or would, as in the working tree."""
    listed = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"], cwd=ROOT,
                            capture_output=True, check=True).stdout
    for rel in filter(None, listed.decode().split("\0")):
        if (ROOT / rel).is_file():
            (copy / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(ROOT / rel, copy / rel)
    return copy


@pytest.fixture(scope="module")
def kit(tmp_path_factory):
    """A copy of the kit's files (those git tracks or would, as in the working tree), with the guide's stage
    added: the stage's files written, the row appended, and ``attention-lab build`` run."""
    copy = copied_kit(tmp_path_factory.mktemp("kit") / "attention-lab")
    for kind, rel, text in guide_blocks():
        if kind == "file":
            (copy / rel).write_text(text)
        else:  # where the guide says it goes, as `attention-lab new-stage` adds a row
            assert rel == CURRICULUM
            row_adder(copy)(text)
    touched = {rel for _, rel, _ in guide_blocks()}
    built = cli(copy, "build")
    assert built.returncode == 0, built.stderr[-3000:]
    written = {line.removeprefix("wrote ") for line in built.stdout.splitlines() if line.startswith("wrote ")}
    # What the build wrote for the new stage: its stub; the golden data and forms of every probe; and, from
    # the curriculum and the registry, the public checks' copy of the stage list and the GitHub Classroom
    # template (its workflow's steps and its README's list of stages).
    assert written == {"assignments/attention_lab/alibi.py", "autograder/grading/golden/golden.pt",
                       "autograder/grading/golden/forms.json", "assignments/tests/curriculum.py",
                       "assignments/.github/workflows/classroom.yml", "assignments/README.md"}, written
    return copy, touched


def cli(copy, *args):
    """``attention-lab`` run from the copy: its own ``autograder`` package, not this checkout's."""
    return subprocess.run([sys.executable, "-m", "autograder.cli", *args], cwd=copy, capture_output=True, text=True,
                          timeout=600)


def graded(copy, folder, tmp_path, *stages):
    out = tmp_path / f"{Path(folder).name}.json"
    done = cli(copy, "grade", str(folder), *[f"--stage={s}" for s in stages], "--json", str(out))
    assert done.returncode == 0, done.stderr[-3000:]
    return {t["number"]: (t["score"], t["max_score"], t["output"]) for t in json.loads(out.read_text())["tests"]}


def test_the_copy_is_the_kit_the_guide_extends(kit):
    copy, _ = kit
    found = subprocess.run([sys.executable, "-c", "import autograder, sys; print(autograder.__file__)"], cwd=copy,
                           capture_output=True, text=True, check=True).stdout.strip()
    assert Path(found).resolve().is_relative_to(copy.resolve()), found


def test_the_reference_gets_every_point_of_the_new_stage(kit, tmp_path):
    copy, _ = kit
    results = graded(copy, copy / "solutions", tmp_path, NUMBER)
    assert set(results) == {f"s{NUMBER}.slopes", f"s{NUMBER}.bias"}
    assert all(score == top for score, top, _ in results.values()), results
    assert sum(top for _, top, _ in results.values()) == 3


def test_the_stub_is_not_started_and_gets_nothing(kit, tmp_path):
    copy, _ = kit
    stub = (copy / "assignments" / "attention_lab" / "alibi.py").read_text()
    assert "### BEGIN SOLUTION" not in stub and stub.count("raise NotImplementedError()") == 2
    results = graded(copy, copy / "assignments", tmp_path, NUMBER)
    assert all(score == 0 and "not implemented yet" in out for score, _, out in results.values()), results


@pytest.mark.parametrize("slip, said, bias_too", [
    # slopes of 1/2 ... for any head count: the 8 heads' slopes, remembered
    (("start = 2.0 ** (-8.0 / n)", "start = 0.5"), "alibi_slopes(", True),
    # 2 ** (-8 / n) for every n, right for powers of two alone: the bias, of 4 heads, is right, and keeps its points
    (("below = 2 ** int(math.log2(num_heads))", "below = num_heads"), "is right for a power of two heads alone",
     False),
    # a float64 table
    (("dtype=torch.float32)", "dtype=torch.float64)"), "has dtype float64, expected float32", True)])
def test_a_wrong_alibi_loses_the_check_it_breaks(kit, tmp_path, slip, said, bias_too):
    """The slopes check is lost with feedback naming the case, and the bias, built from the slopes, where the
    slip reaches its 4 heads."""
    copy, _ = kit
    wrong = tmp_path / "wrong"
    shutil.copytree(copy / "solutions", wrong)
    module = wrong / "attention_lab" / "alibi.py"
    source = module.read_text()
    assert source.count(slip[0]) == 1
    module.write_text(source.replace(*slip))
    results = graded(copy, wrong, tmp_path, NUMBER)
    assert results[f"s{NUMBER}.slopes"][0] == 0 and said in results[f"s{NUMBER}.slopes"][2], results
    assert (results[f"s{NUMBER}.bias"][0] == 0) == bias_too, results


def test_the_kits_own_stages_grade_as_before(kit, tmp_path):
    copy, _ = kit
    results = graded(copy, copy / "solutions", tmp_path)
    assert all(score == top for score, top, _ in results.values()), [k for k, v in results.items() if v[0] != v[1]]
    assert sum(top for _, top, _ in results.values()) == KITS_POINTS + 3  # the kit's, and the new stage's 3


def test_the_students_self_checks_select_the_new_stage_by_its_marker(kit):
    copy, _ = kit
    reference = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-m", f"stage{NUMBER}"],
                               cwd=copy / "assignments", capture_output=True, text=True, timeout=300,
                               env={"ATTENTION_LAB_SUBMISSION": str(copy / "solutions"), "PATH": "/usr/bin:/bin"})
    assert reference.returncode == 0 and "2 passed" in reference.stdout, reference.stdout[-2000:]
    stub = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-m", f"stage{NUMBER}"],
                          cwd=copy / "assignments", capture_output=True, text=True, timeout=300)
    assert stub.returncode == 1 and "2 failed" in stub.stdout, stub.stdout[-2000:]



def test_the_guides_zoo_entries_lose_and_keep_what_they_say(kit):
    """The guide's wrong entry loses s11.slopes alone, with the words it names; its correct one keeps every point:
    the kit's own zoo test, run in the copy on the new stage's entries (``-m stageN``)."""
    copy, _ = kit
    done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-rA", "-p", "no:cacheprovider", "tests/test_zoo.py",
                           "-m", f"stage{NUMBER}"], cwd=copy, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout[-3000:]
    for ran in ("test_wrong_entry_is_caught[s11_alibi_slopes_remembered]",
                "test_correct_entry_gets_full_marks[s11_alibi_slopes_by_exponent]"):
        assert f"PASSED tests/test_zoo.py::{ran}" in done.stdout, done.stdout[-3000:]


def test_a_check_naming_a_probe_nobody_declared_is_the_kits_error_not_the_students(monkeypatch):
    """A stage whose probes module is missing, or misspells a name (its own probe's, or one whose golden
    data it compares with): found when the registry is gathered,
    before any grading, rather than in the child, whose KeyError would read as the submission's crash."""
    from autograder.grading import registry

    for declared in ({"probe": "s1.no_such_probe"}, {"probe": "s1.scores", "golden_of": ("s1.no_such_probe",)}):
        stage = registry.Checks(1)
        stage.add("s1.lost", points=1, title="its probe is missing", **declared)(lambda obs, ctx: None)
        monkeypatch.setattr(registry, "declared", lambda: {1: stage})
        with pytest.raises(ValueError, match="s1.no_such_probe.*no module of autograder/probes declares"):
            registry.registry.__wrapped__()


def test_the_nbgrader_course_has_a_notebook_for_the_new_stage(kit, tmp_path):
    """Its introduction is the module's docstring; its answer cells are the solution regions, with the
    solutions in the instructor's source (nbgrader cuts them at generate_assignment)."""
    copy, _ = kit
    done = cli(copy, "nbgrader", "init", str(tmp_path / "course"))
    assert done.returncode == 0, done.stderr[-3000:]
    notebook = json.loads((tmp_path / "course" / "source" / "attention" / f"stage{NUMBER}_alibi.ipynb").read_text())
    text = "\n".join("".join(cell["source"]) for cell in notebook["cells"])
    assert "ALiBi, attention with linear biases" in text and "### BEGIN SOLUTION" in text
    assert "def alibi_slopes(num_heads):" in text and "def alibi_bias(num_heads, num_tokens):" in text
