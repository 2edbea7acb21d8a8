"""The public self-checks in assignments/tests: they pass on the reference, fail on the stubs
with "not implemented yet" and no traceback, select by stage marker, run from a bare copy of
the student's folder, and contain none of the hidden graders."""
import os
import re
import shutil
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from autograder.authoring.build import SHARED_WITH_STUDENTS
from autograder.curriculum import STAGES as REGISTERED
from tests.forked import ForkedPytestRun
from tools.zoo import CORRECT, SEEDS, WRONG, assemble, read_entry

ROOT = Path(__file__).resolve().parent.parent
PUBLIC = ROOT / "assignments" / "tests"
SOLUTIONS = ROOT / "solutions"
ENV_VAR = "ATTENTION_LAB_SUBMISSION"
STAGES = sorted(REGISTERED)  # every stage the kit grades has public checks
HIDDEN = ("golden", "jacobian", "known_weights", "state_dict_report", "leak_report", "dropout_report", "autograder")


STUDENT_OPTIONS = ("-p", "no:cacheprovider", "-p", "no:hypothesispytest")  # a course's environment has no Hypothesis


def student_env(submission=None):
    """The environment of a student's pytest run, checking ``submission`` when given."""
    env = {k: v for k, v in os.environ.items() if k not in (ENV_VAR, "PYTEST_ADDOPTS", "PYTEST_PLUGINS")}
    env["PYTHONDONTWRITEBYTECODE"] = "1"  # leave no __pycache__ in the student's folder
    if submission is not None:
        env[ENV_VAR] = str(submission)
    return env


class PytestRun:
    """``python -m pytest ARGS -p no:cacheprovider`` in a subprocess, started at once so that
    the runs (each mostly importing torch) overlap; ``result()`` waits: (exit code, output)."""

    def __init__(self, *args, cwd=ROOT, submission=None):
        self.proc = subprocess.Popen([sys.executable, "-m", "pytest", *args, *STUDENT_OPTIONS], cwd=cwd,
                                     env=student_env(submission), stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                     text=True)
        self._result = None

    def result(self):
        if self._result is None:
            try:
                output, _ = self.proc.communicate(timeout=300)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                output, _ = self.proc.communicate()
            self._result = self.proc.returncode, output
        return self._result


def count(output, word):
    """N from the summary line's "N passed" / "N failed" / "N deselected" (0 when absent)."""
    found = re.findall(rf"(\d+) {word}", output.strip().splitlines()[-1]) if output.strip() else []
    return int(found[0]) if found else 0


def failure_sections(output):
    """{test name: the text pytest printed for its failure}, from the FAILURES section."""
    sections, name = {}, None
    for line in output.splitlines():
        header = re.fullmatch(r"_+ (test_\w+) _+", line)
        if header:
            name = header.group(1)
            sections[name] = []
        elif line.startswith("====="):
            name = None
        elif name is not None:
            sections[name].append(line)
    return {k: "\n".join(v) for k, v in sections.items()}


def stage_of(node_id):
    found = re.search(r"test_stage(\d+)_\w+\.py::", node_id)
    return int(found.group(1)) if found else None


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """Every subprocess this file needs, all started before the first one is waited for."""
    copy = tmp_path_factory.mktemp("student") / "lab"  # a bare copy of the student's folder
    shutil.copytree(PUBLIC, copy / "tests", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copytree(SOLUTIONS / "attention_lab", copy / "attention_lab", ignore=shutil.ignore_patterns("__pycache__"))
    no_package = tmp_path_factory.mktemp("no_package")
    stage3 = ("--collect-only", "-q", "-m", "stage3")
    started = {
        "reference": PytestRun("assignments/tests", "-q", "-rA", submission=SOLUTIONS),
        "stubs": PytestRun("assignments/tests", "-q"),
        "stage3 from repo root": PytestRun("assignments", *stage3, submission=SOLUTIONS),
        "stage3 from assignments": PytestRun(*stage3, cwd=ROOT / "assignments", submission=SOLUTIONS),
        "copy": PytestRun(cwd=copy),  # no pyproject.toml there: pytest's default import mode
        "no package": PytestRun("assignments/tests", "-q", submission=no_package),
        "-k speed": PytestRun("--collect-only", "-q", "-k", "speed", cwd=ROOT / "assignments", submission=SOLUTIONS),
    }
    started["copy"].folder = copy
    yield started
    for run in started.values():
        if run.proc.poll() is None:
            run.proc.kill()
            run.proc.wait()


@pytest.fixture(scope="module")
def reference_ids(runs):
    _, output = runs["reference"].result()
    return re.findall(r"^PASSED (\S+::test_\w+)", output, flags=re.M)


def test_public_checks_pass_on_the_reference(runs, reference_ids):
    code, output = runs["reference"].result()
    assert code == 0, output
    assert count(output, "passed") == len(reference_ids) > 0, output
    assert "failed" not in output.splitlines()[-1] and "error" not in output.splitlines()[-1], output
    assert "PytestUnknownMarkWarning" not in output, output


def test_every_stage_has_a_few_public_checks(reference_ids):
    per_stage = {s: sum(stage_of(i) == s for i in reference_ids) for s in STAGES}
    assert all(n >= 1 for n in per_stage.values()), per_stage  # a new stage's guide asks for one at least
    assert all(per_stage[s] >= 4 for s in range(1, 11)), per_stage  # the kit's own stages: a few each
    assert sum(per_stage.values()) == len(reference_ids), reference_ids  # every check lives in a stage file


def test_every_public_check_fails_on_the_stubs_with_not_implemented_yet_and_no_traceback(runs, reference_ids):
    code, output = runs["stubs"].result()
    assert code == 1, output
    assert count(output, "failed") == len(reference_ids), output
    assert count(output, "passed") == 0 and count(output, "error") == 0, output
    sections = failure_sections(output)
    assert len(sections) == len(reference_ids), output
    for name, text in sections.items():
        assert re.search(r"not implemented yet: \S+ \(attention_lab/\w+\.py line \d+\)", text), f"{name}:\n{text}"
    assert "Traceback" not in output and "During handling" not in output, output
    assert not re.search(r"^E\s", output, flags=re.M), output  # pytest's traceback lines


@pytest.mark.parametrize("where", ["repo root", "assignments"])
def test_stage_marker_selects_only_that_stage(where, runs, reference_ids):
    code, output = runs[f"stage3 from {where}"].result()
    assert code == 0, output
    selected = re.findall(r"^\S+::test_\w+$", output, flags=re.M)
    stage3 = [i for i in reference_ids if stage_of(i) == 3]
    assert selected and all(stage_of(i) == 3 for i in selected), output
    assert len(selected) == len(stage3), output
    assert count(output, "deselected") == len(reference_ids) - len(stage3), output
    assert "PytestUnknownMarkWarning" not in output and "Unknown pytest.mark" not in output, output


def test_a_bare_copy_of_the_student_folder_checks_its_own_attention_lab(runs, reference_ids):
    folder = runs["copy"].folder
    code, output = runs["copy"].result()
    assert code == 0, output
    assert count(output, "passed") == len(reference_ids), output
    assert f"checking attention_lab in {(folder / 'attention_lab').resolve()}" in output, output


def test_a_submission_folder_without_attention_lab_is_a_usage_error(runs):
    code, output = runs["no package"].result()
    assert code == pytest.ExitCode.USAGE_ERROR, output
    assert ENV_VAR in output and "Traceback" not in output, output


def test_public_checks_are_marked_by_stage_and_hold_none_of_the_hidden_graders():
    shared = {Path(name).name for name in SHARED_WITH_STUDENTS}  # generated from the kit's public modules
    files = sorted(p for p in PUBLIC.glob("*.py") if p.name not in shared)
    for stage in STAGES:
        stage_files = list(PUBLIC.glob(f"test_stage{stage}_*.py"))
        assert len(stage_files) == 1, f"stage {stage}: {stage_files}"
        assert f"pytestmark = pytest.mark.stage{stage}\n" in stage_files[0].read_text()
    for path in files:
        text = path.read_text().lower()
        for word in HIDDEN:
            assert word not in text, f"{path.name} mentions {word!r}: hidden checks stay in autograder/"


def test_k_speed_selects_the_speed_check_of_stage_8(runs, reference_ids):
    code, output = runs["-k speed"].result()
    assert code == 0, output
    selected = re.findall(r"^\S+::(test_\w+)$", output, flags=re.M)
    assert len(selected) == 1 and selected[0].startswith("test_speed_"), output
    assert any(i.endswith(f"test_stage8_modern.py::{selected[0]}") for i in reference_ids), (selected, reference_ids)


def test_the_readmes_give_students_a_command_their_handout_has(root):
    """The handout holds no `attention-lab`: the students' commands are pytest's, from the handout folder,
    and the kit's README names the hidden graders' command only as the kit checkout's."""
    section = (root / "README.md").read_text().split("## For students and self-learners")[1].split("\n## ")[0]
    commands = re.findall(r"```bash\n(.*?)```", section, flags=re.S)
    lines = [line for block in commands for line in block.splitlines() if line.strip()]
    assert lines and all(re.match(r"cd assignments && python -m pytest\b", line) for line in lines), lines
    sentences = re.split(r"(?<=[.;])\s", " ".join(section.split()))
    graders = [sentence for sentence in sentences if "attention-lab" in sentence]
    assert graders and all("kit's checkout" in sentence for sentence in graders), graders
    handout = (root / "assignments" / "README.md").read_text()
    assert "python -m pytest -m stage1" in handout and "attention-lab" not in handout


# --- public checks against edited copies of the reference -------------------------------------------

STAGE4_FILE = "tests/test_stage4_multihead.py"
CAUSAL_CHECK = "test_pytorch_variant_never_lets_a_token_see_a_later_token"
FLOAT_MASK_TRAP = ("nn.MultiheadAttention adds a float attn_mask to the scores; pass a bool mask (True = hidden) "
                   "or -inf above the diagonal")
GQA_ORDER = "num_heads and num_kv_heads come before dropout here"
FAST_ORDER = "dropout comes before num_heads here"

# GroupedQueryAttention in stage 4's order, and FastMultiHeadAttention in GroupedQueryAttention's.
ARGUMENTS_SWAPPED = """
_GroupedQueryAttention, _FastMultiHeadAttention = GroupedQueryAttention, FastMultiHeadAttention


class GroupedQueryAttention(_GroupedQueryAttention):
    def __init__(self, d_in, d_out, context_length, dropout, num_heads, num_kv_heads, qkv_bias=False):
        super().__init__(d_in, d_out, context_length, num_heads, num_kv_heads, dropout, qkv_bias)


class FastMultiHeadAttention(_FastMultiHeadAttention):
    def __init__(self, d_in, d_out, context_length, num_heads, dropout=0.0, qkv_bias=False):
        super().__init__(d_in, d_out, context_length, dropout, num_heads, qkv_bias)
"""

# The same mistake under names of the student's own, which say nothing about the order.
ARGUMENTS_RENAMED = """
_GroupedQueryAttention = GroupedQueryAttention


class GroupedQueryAttention(_GroupedQueryAttention):
    def __init__(self, d_in, d_out, ctx, p, n_heads, n_kv_heads, qkv_bias=False):
        super().__init__(d_in, d_out, ctx, n_heads, n_kv_heads, p, qkv_bias)
"""


def _reference_with(folder, module, code):
    package = folder / "attention_lab"
    shutil.copytree(SOLUTIONS / "attention_lab", package, ignore=shutil.ignore_patterns("__pycache__"))
    target = package / f"{module}.py"
    target.write_text(target.read_text() + "\n\n" + code)
    return folder


def _defines(path, *names):
    text = path.read_text()
    return any(re.search(rf"^(class {name}\b|{name}\b.* = )", text, flags=re.M) for name in names)


# The zoo's correct and seed entries whose code the new public checks call: they must pass them.
NO_FALSE_ALARM = ([(p, ("-k", CAUSAL_CHECK)) for p in CORRECT + SEEDS
                   if read_entry(p)["MODULE"] == "multihead" and _defines(p, "MultiHeadAttentionPyTorch")]
                  + [(p, ("-m", "stage8", "-k", "not speed")) for p in CORRECT + SEEDS
                     if read_entry(p)["MODULE"] == "modern" and _defines(p, "GroupedQueryAttention",
                                                                           "FastMultiHeadAttention")]
                  + [(p, ("-m", "stage9")) for p in CORRECT + SEEDS if read_entry(p)["MODULE"] == "frontier"])


@pytest.fixture(scope="module")
def edited(tmp_path_factory):
    """{name: (exit code, output)} of the public checks run against copies of the reference with one bug
    each, and against the zoo entries of NO_FALSE_ALARM, two at a time."""
    float_mask = WRONG[[p.stem for p in WRONG].index("pytorch_float_mask")]
    jobs = {
        "float mask": (assemble(float_mask, read_entry(float_mask), tmp_path_factory.mktemp("float_mask")),
                       ("-q", STAGE4_FILE)),
        "arguments swapped": (_reference_with(tmp_path_factory.mktemp("swapped"), "modern", ARGUMENTS_SWAPPED),
                              ("-q", "-m", "stage8", "-k", "not speed")),
        "arguments renamed": (_reference_with(tmp_path_factory.mktemp("renamed"), "modern", ARGUMENTS_RENAMED),
                              ("-q", "-m", "stage8", "-k", "not speed")),
    }
    for path, args in NO_FALSE_ALARM:
        entry = read_entry(path)
        jobs[f"{path.parent.name}/{path.stem}"] = (assemble(path, entry, tmp_path_factory.mktemp(path.stem)),
                                                   ("-q", *args))

    def run(job):
        folder, args = job
        return ForkedPytestRun(*args, *STUDENT_OPTIONS, cwd=ROOT / "assignments", env=student_env(folder)).result()

    with ThreadPoolExecutor(2) as pool:  # forked from one process that imported torch: the verdicts are the point
        return dict(zip(jobs, pool.map(run, jobs.values())))


def test_a_forked_run_gives_what_a_fresh_interpreter_gives(tmp_path):
    """The shortcut the variants take (``ForkedPytestRun``) against a student's own process (``PytestRun``),
    on a variant that fails one check: the same exit code, failures and feedback, the summary's time aside."""
    float_mask = WRONG[[p.stem for p in WRONG].index("pytorch_float_mask")]
    folder = assemble(float_mask, read_entry(float_mask), tmp_path)
    fresh = PytestRun("-q", STAGE4_FILE, cwd=ROOT / "assignments", submission=folder)
    forked = ForkedPytestRun("-q", STAGE4_FILE, *STUDENT_OPTIONS, cwd=ROOT / "assignments", env=student_env(folder))
    (fresh_code, fresh_output), (forked_code, forked_output) = fresh.result(), forked.result()

    def timeless(output):
        return re.sub(r" in [\d.]+s", "", output)

    assert fresh_code == forked_code == 1, (fresh_output, forked_output)
    assert failure_sections(fresh_output) == failure_sections(forked_output)
    assert timeless(fresh_output).splitlines()[-1] == timeless(forked_output).splitlines()[-1], forked_output


def test_a_pytorch_variant_with_a_float_0_1_mask_fails_the_causality_check_naming_the_trap(edited, reference_ids):
    assert any(i.endswith(f"{STAGE4_FILE}::{CAUSAL_CHECK}") for i in reference_ids), reference_ids
    code, output = edited["float mask"]
    sections = failure_sections(output)
    assert code == 1 and list(sections) == [CAUSAL_CHECK], output  # every other stage-4 check passes it
    assert FLOAT_MASK_TRAP in sections[CAUSAL_CHECK], output
    assert "changing tokens 1..5 moved the output at position 0" in sections[CAUSAL_CHECK], output
    assert "Traceback" not in output, output


def test_arguments_in_another_order_than_the_contracts_are_named_as_such(edited, reference_ids):
    stage8 = {i.split("::")[1] for i in reference_ids if stage_of(i) == 8 and "speed" not in i}
    code, output = edited["arguments swapped"]
    sections = failure_sections(output)
    unaffected = {"test_repeat_kv_repeats_each_key_value_head_for_its_group_in_order"}
    assert code == 1 and set(sections) == stage8 - unaffected, output
    for name, text in sections.items():
        trap = FAST_ORDER if name.startswith("test_fast_attention") else GQA_ORDER
        assert trap in text and "your " in text, f"{name}:\n{text}"
    assert "your dropout would get the value meant for num_heads" in output, output  # GroupedQueryAttention
    assert "your num_heads would get the value meant for dropout" in output, output  # FastMultiHeadAttention

    code, output = edited["arguments renamed"]  # the names tell nothing: the error's message is the clue
    sections = failure_sections(output)
    assert code == 1 and sections and not any(name.startswith("test_fast_attention") for name in sections), output
    for name, text in sections.items():
        assert "(check the order of the arguments: the checks call GroupedQueryAttention(d_in, d_out, " in text, (
            f"{name}:\n{text}")
        assert GQA_ORDER in text, f"{name}:\n{text}"
    assert "Traceback" not in output, output


@pytest.mark.parametrize("name", [f"{p.parent.name}/{p.stem}" for p, _ in NO_FALSE_ALARM])
def test_the_new_checks_accept_the_zoos_correct_and_seed_code(edited, name):
    code, output = edited[name]
    assert code == 0 and count(output, "passed") > 0 and count(output, "failed") == 0, output



def test_failed_weights_are_saved_as_pictures_in_the_folder_the_message_names(tmp_path):
    """fill_with_zero gives the future weight: the failure names the pictures of the student's
    weights (and of the book's), saved beside the attention_lab/ checked, the future in red."""
    entry = WRONG[[p.stem for p in WRONG].index("fill_with_zero")]
    folder = assemble(entry, read_entry(entry), tmp_path / "zero")
    code, output = PytestRun("-q", "-m", "stage3", cwd=ROOT / "assignments", submission=folder).result()
    named = sorted(set(re.findall(r"failed-pictures/test_causal_weights_by_fill_reproduce_the_book-\d\.svg", output)))
    assert code == 1 and len(named) == 2, output
    yours, books = (folder / n for n in named)
    assert "#d62728" in yours.read_text() and "journey" in yours.read_text()  # the future in red, the tokens
    assert "the book&#x27;s weights" in books.read_text() and "#d62728" not in books.read_text()
    assert not (ROOT / "assignments" / "failed-pictures").exists()
