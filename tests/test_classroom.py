"""The GitHub Classroom template that `attention-lab build` writes into assignments/ (and `export
classroom` writes for a course configuration): one grader step per public test, a stage's points
shared among its tests, the torch of constraints.txt from the CPU wheels, numpy, and commands that
pass on the reference and fail on the stubs, with partial credit for a submission partly right."""
import re
import shlex
import shutil
from concurrent.futures import ThreadPoolExecutor

import pytest
import yaml

from tools.zoo import reference_code
from autograder.cli import main
from autograder.curriculum import STAGES
from autograder.delivery.classroom import public_tests
from autograder.grading.registry import max_points
from tests.test_public_checks import PytestRun

GRADER = "classroom-resources/autograding-command-grader@v1"
REPORTER = "classroom-resources/autograding-grading-reporter@v1"
CPU_WHEELS = "https://download.pytorch.org/whl/cpu"


@pytest.fixture(scope="module")
def workflow(root):
    return yaml.safe_load((root / "assignments" / ".github" / "workflows" / "classroom.yml").read_text())


@pytest.fixture(scope="module")
def steps(workflow):
    (job,) = workflow["jobs"].values()  # GitHub Classroom reads the scores of a one-job workflow
    return job["steps"]


@pytest.fixture(scope="module")
def graders(steps):
    return [s for s in steps if s.get("uses") == GRADER]


def test_the_workflow_is_the_one_github_classroom_reads(workflow):
    assert workflow["name"] == "Autograding Tests"
    assert list(workflow["jobs"]) == ["run-autograding-tests"]
    assert workflow["on"] == ["push", "repository_dispatch"]
    assert workflow["permissions"] == {"checks": "write", "actions": "read", "contents": "read"}
    assert workflow["jobs"]["run-autograding-tests"]["if"] == "github.actor != 'github-classroom[bot]'"


def step_stage(step):
    return int(re.fullmatch(r"s(\d+)_\d+", step["id"]).group(1))


def test_one_grader_step_per_public_test_and_a_stages_points_shared_among_them(graders):
    nodes = [shlex.split(s["with"]["command"]) for s in graders]
    assert all(argv[:3] == ["python", "-m", "pytest"] for argv in nodes), nodes
    assert [argv[-1] for argv in nodes] == [n for s in STAGES.values() for n in public_tests(s)]
    for number in STAGES:
        points = [s["with"]["max-score"] for s in graders if step_stage(s) == number]
        assert sum(points) == max_points(number) and max(points) - min(points) <= 1, (number, points)
    assert all(s["with"]["test-name"].startswith(f"Stage {step_stage(s)}: ") and s["with"]["timeout"] > 0
               for s in graders)


def test_the_reporter_reads_every_grader_step(steps, graders):
    reporter = steps[-1]
    assert reporter["uses"] == REPORTER
    ids = [s["id"] for s in graders]
    assert reporter["with"]["runners"].split(",") == ids
    assert reporter["env"] == {f"{i.upper()}_RESULTS": f"${{{{steps.{i}.outputs.result}}}}" for i in ids}


def test_setup_installs_the_pinned_torch_from_the_cpu_wheels_and_the_handouts_requirements(root, steps):
    pin = re.search(r"^torch==(\S+)", (root / "constraints.txt").read_text(), flags=re.M).group(0)
    assert [s["uses"].split("@")[0] for s in steps[:2]] == ["actions/checkout", "actions/setup-python"]
    installs = [shlex.split(line) for line in steps[2]["run"].splitlines() if line.strip()]
    torch = [words for words in installs if any(w.startswith("torch") for w in words)]
    assert len(torch) == 1 and pin in torch[0], installs
    assert torch[0][torch[0].index("--index-url") + 1] == CPU_WHEELS, installs
    assert ["python", "-m", "pip", "install", "-r", "requirements.txt"] in installs
    requirements = (root / "assignments" / "requirements.txt").read_text()
    wanted = [line.split("#")[0].strip() for line in requirements.splitlines()]
    assert {pin, "numpy", "pytest"} <= set(wanted)


def test_the_template_carries_the_handouts_readme_and_gitignore(root):
    readme = (root / "assignments" / "README.md").read_text()
    for stage in STAGES.values():
        assert f"| {stage.number} | {stage.title} | `attention_lab/{stage.module}.py` | {max_points(stage.number)} |" \
            in readme
    assert "__pycache__/" in (root / "assignments" / ".gitignore").read_text().split()


def test_the_handouts_readme_installs_the_torch_its_requirements_pin_from_the_cpu_wheels(root):
    """Else `pip install -r requirements.txt` replaces a newer CPU torch by the pinned one from PyPI, CUDA and all."""
    pin = re.search(r"^torch==\S+", (root / "assignments" / "requirements.txt").read_text(), flags=re.M).group(0)
    installs = [shlex.split(line) for line in (root / "assignments" / "README.md").read_text().splitlines()
                if "pip install" in line]
    torch = [words for words in installs if any(w.startswith("torch") for w in words)]
    assert len(torch) == 1 and pin in torch[0], installs
    assert torch[0][torch[0].index("--index-url") + 1] == CPU_WHEELS, installs
    assert ["python", "-m", "pip", "install", "-r", "requirements.txt"] in installs


def test_export_writes_a_template_for_a_course_configuration(tmp_path, monkeypatch, capsys):
    (tmp_path / "attention-lab.toml").write_text("stages = [1, 3]\n[points]\nstage3 = 30\n")
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("ATTENTION_LAB_CONFIG", raising=False)
    assert main(["export", "classroom", "--out", "template"]) == 0
    assert "course configuration:" in capsys.readouterr().err
    out = tmp_path / "template"
    workflow = yaml.safe_load((out / ".github" / "workflows" / "classroom.yml").read_text())
    (job,) = workflow["jobs"].values()
    graders = [s for s in job["steps"] if s.get("uses") == GRADER]
    assert {step_stage(s) for s in graders} == {1, 3}
    assert sum(s["with"]["max-score"] for s in graders if step_stage(s) == 3) == 30
    for rel in ("README.md", "requirements.txt", ".gitignore", "attention_lab/causal.py", "tests/conftest.py"):
        assert (out / rel).is_file(), rel
    readme = (out / "README.md").read_text()
    assert "| 3 | causal attention with dropout | `attention_lab/causal.py` | 30 |" in readme
    # not the course's
    others = ", ".join(str(n) for n in STAGES if n not in (1, 3))  # every stage the course does not teach
    assert f"The files of stage(s) {others} (`attention_lab/self_attention.py`," in readme
    assert main(["export", "classroom", "--out", "template"]) == 2  # never over an existing template
    assert "is not empty" in capsys.readouterr().err


@pytest.fixture(scope="module")
def node_outcomes(root, graders, tmp_path_factory):
    """{(code, node id): outcome} of every grader step's test, in a copy of assignments/ whose
    attention_lab/ holds the reference as handed in ("reference"), the stubs, or the reference with
    one wrong function in stage 3 ("partly"). Each copy's stage files run in one pytest with their
    outcomes listed (-rA): the same tests the steps run one by one, each in a process of its own, in
    far less time (each of those processes is mostly importing torch)."""
    ref = reference_code(root)
    wrong = {"reference": {}, "stubs": None,
             "partly": {"causal": ref["causal"] + "\n\n" + (root / "tests/zoo/wrong/fill_with_zero.py").read_text()}}
    copies = {}
    for code, edits in wrong.items():
        copy = copies[code] = tmp_path_factory.mktemp(code)
        for folder in ("attention_lab", "tests"):
            shutil.copytree(root / "assignments" / folder, copy / folder, ignore=shutil.ignore_patterns("__pycache__"))
        for module, source in ({} if edits is None else {**ref, **edits}).items():
            (copy / "attention_lab" / f"{module}.py").write_text(source)
    files = sorted({shlex.split(s["with"]["command"])[-1].split("::")[0] for s in graders})

    def run(code):
        _, output = PytestRun("-q", "-rA", *files, cwd=copies[code]).result()
        return {(code, node): Outcome(outcome, output) for outcome, node in
                re.findall(r"^(PASSED|FAILED|ERROR) (\S+::\w+)", output, flags=re.M) if node.split("::")[0] in files}

    with ThreadPoolExecutor(2) as pool:
        return {key: outcome for outcomes in pool.map(run, copies) for key, outcome in outcomes.items()}


class Outcome(str):
    """A test's outcome ("PASSED", ...), which keeps its file's pytest output for a failure's message."""

    def __new__(cls, outcome, output):
        made = super().__new__(cls, outcome)
        made.output = output
        return made


def test_each_step_awards_its_points_only_when_its_test_passes(graders, node_outcomes):
    for step in graders:
        node = shlex.split(step["with"]["command"])[-1]
        reference = node_outcomes["reference", node]
        assert reference == "PASSED", f"{node}:\n{reference.output[-4000:]}"
        assert node_outcomes["stubs", node] != "PASSED", node


def test_a_stage_partly_right_earns_part_of_its_points(graders, node_outcomes):
    def earned(code, stage):
        return sum(s["with"]["max-score"] for s in graders if step_stage(s) == stage
                   and node_outcomes[code, shlex.split(s["with"]["command"])[-1]] == "PASSED")

    assert 0 < earned("partly", 3) < max_points(3) == earned("reference", 3)
    assert earned("partly", 1) == max_points(1)


def test_one_steps_command_runs_as_written(graders, root, tmp_path):
    """What GitHub runs: the step's own command line, in a fresh copy with the reference."""
    for folder in ("attention_lab", "tests"):
        shutil.copytree(root / "assignments" / folder, tmp_path / folder, ignore=shutil.ignore_patterns("__pycache__"))
    for module, source in reference_code(root).items():
        (tmp_path / "attention_lab" / f"{module}.py").write_text(source)
    argv = shlex.split(graders[0]["with"]["command"])
    code, output = PytestRun(*argv[3:], cwd=tmp_path).result()
    assert code == 0 and re.search(r"1 passed", output), output
