"""``attention-lab new-stage``, as an instructor runs it: in a copy of the kit, the command writes a stage of
another kind than the guide's (a function of two tensors, no softmax and no mask), the kit is built, the
stage's own tests run with the one command that tests a stage, and the guards that span the whole kit
(totals, docs, notebooks, the bench) stay green with the stage added. Nothing outside the stage's own files
and its curriculum row is edited."""
from __future__ import annotations

import subprocess
import sys

import pytest

from autograder.curriculum import STAGES

from .test_new_stage import cli, copied_kit

NUMBER = max(STAGES) + 1
# the guards that span every stage: what breaks when a stage is added without being told
GUARDS = ["tests/test_suite_guards.py", "tests/test_docs.py", "tests/test_course.py", "tests/test_build.py",
          "tests/test_architecture.py"]


@pytest.fixture(scope="module")
def kit(tmp_path_factory):
    copy = copied_kit(tmp_path_factory.mktemp("kit") / "attention-lab")
    before = {p.relative_to(copy): p.read_bytes() for p in copy.rglob("*") if p.is_file()}
    made = cli(copy, "new-stage", str(NUMBER), "scores_demo", "--title", "scaled scores",
               "--teaches", "dot products of queries and keys, scaled by the key width")
    assert made.returncode == 0, made.stderr
    built = cli(copy, "build")
    assert built.returncode == 0, built.stderr[-3000:]
    return copy, before, made.stdout


def test_the_command_writes_the_stages_own_files_and_its_row_alone(kit):
    copy, before, said = kit
    after = {p.relative_to(copy): p.read_bytes() for p in copy.rglob("*") if p.is_file()
             and "__pycache__" not in p.parts}
    edited = {str(p) for p in before if p in after and before[p] != after[p]}
    added = {str(p) for p in after if p not in before}
    # the curriculum row; and what `attention-lab build` writes from it (generated, never edited by hand)
    assert edited == {"autograder/curriculum.py", "assignments/tests/curriculum.py", "assignments/README.md",
                      "assignments/.github/workflows/classroom.yml", "autograder/grading/golden/golden.pt",
                      "autograder/grading/golden/forms.json"}, edited
    assert added == {"solutions/attention_lab/scores_demo.py", f"autograder/probes/stage{NUMBER}.py",
                     f"autograder/grading/checks/stage{NUMBER}.py",
                     f"assignments/tests/test_stage{NUMBER}_scores_demo.py",
                     f"tests/zoo/wrong/s{NUMBER}_scores_unscaled.py", f"tests/zoo/correct/s{NUMBER}_scores_einsum.py",
                     "assignments/attention_lab/scores_demo.py"}, added
    assert f"python -m tools.stage_tests {NUMBER}" in said


def test_the_one_command_that_tests_a_stage_passes_on_it(kit):
    copy, _, _ = kit
    done = subprocess.run([sys.executable, "-m", "tools.stage_tests", str(NUMBER), "--no-mutants"], cwd=copy,
                          capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, (done.stdout + done.stderr)[-4000:]
    assert f"stage {NUMBER} (scores_demo.py): every step passed" in done.stdout
    # what `-m stageN` ran: the stage's zoo entries, degenerate cases, fuzzed judges and notebook
    listed = subprocess.run([sys.executable, "-m", "pytest", "tests", "-q", "--co", "-p", "no:cacheprovider", "-m",
                             f"stage{NUMBER}"], cwd=copy, capture_output=True, text=True, timeout=300).stdout
    for expected in (f"test_zoo.py::test_wrong_entry_is_caught[s{NUMBER}_scores_unscaled]",
                     f"test_zoo.py::test_correct_entry_gets_full_marks[s{NUMBER}_scores_einsum]",
                     "test_degenerate_zoo.py::test_degenerate_submission[scaled_scores-nan]",
                     f"test_judges_fuzz.py::test_every_single_mutation[s{NUMBER}.scores@cpu]",
                     "test_course.py::test_grade_cells_carry_the_registrys_checks_and_points[scores_demo]"):
        assert expected in listed, listed[-3000:]


def test_the_guards_that_span_the_kit_stay_green_with_the_stage_added(kit):
    copy, _, _ = kit
    done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-n", "2", *GUARDS],
                          cwd=copy, capture_output=True, text=True, timeout=1200)
    assert done.returncode == 0, done.stdout[-4000:]


@pytest.mark.parametrize("args, says", [
    (["3", "again"], "stage 3 is taken: causal attention with dropout; the next free number is"),
    ([str(NUMBER), "simple"], "module 'simple' is stage 1's already"),
    ([str(NUMBER), "Not-A-Module"], "is not a module name")])
def test_what_is_in_the_way_is_refused_with_a_sentence_and_nothing_written(tmp_path, args, says):
    copy = copied_kit(tmp_path / "attention-lab")
    curriculum = (copy / "autograder" / "curriculum.py").read_text()
    done = cli(copy, "new-stage", *args)
    assert done.returncode == 2 and says in done.stderr, done.stderr
    assert (copy / "autograder" / "curriculum.py").read_text() == curriculum
    assert not list((copy / "autograder" / "probes").glob(f"stage{NUMBER}.py"))


def test_a_long_title_or_description_is_written_in_lines_the_linter_accepts():
    """The row's texts are pieces of at most 100 characters that Python joins: a description of two
    sentences would otherwise be one line longer than ruff's 120 (a newcomer's stage failed so)."""
    import ast

    from autograder.authoring.new_stage import ROW, literal

    teaches = ("relative position buckets shared by every layer, a learnt bias per bucket and head, added to the "
               "scores before the softmax, with dropout on the attention weights and a buffer of bucket indices")
    row = ROW.format(number=12, module="relative_bias", title=literal("relative position bias"),
                     teaches=literal(teaches))
    assert max(len(line) for line in row.splitlines()) <= 120
    call = ast.parse(row.strip().rstrip(",")).body[0].value
    assert [ast.literal_eval(arg) for arg in call.args[2:]] == ["relative position bias", teaches]
