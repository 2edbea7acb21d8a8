"""The GitHub Classroom workflow that `attention-lab build` writes into assignments/: one grader
step per stage worth the stage's points, the torch of constraints.txt from the CPU wheels, and
per-stage commands that pass on the reference and fail on the stubs in a copy of assignments/."""
import re
import shlex
import shutil
from concurrent.futures import ThreadPoolExecutor

import pytest
import yaml

from autograder.authoring.course import reference_code
from autograder.curriculum import STAGES
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


def test_one_grader_step_per_stage_worth_its_points(graders):
    assert len(graders) == len(STAGES)
    for step, stage in zip(graders, STAGES):
        inputs = step["with"]
        assert shlex.split(inputs["command"])[:3] == ["python", "-m", "pytest"], inputs
        assert re.search(rf"(^| )-m stage{stage}( |$)", inputs["command"]), inputs
        assert inputs["max-score"] == max_points(stage), inputs
        assert inputs["test-name"] and inputs["timeout"] > 0, inputs
    assert sum(s["with"]["max-score"] for s in graders) == max_points()


def test_the_reporter_reads_every_grader_step(steps, graders):
    reporter = steps[-1]
    assert reporter["uses"] == REPORTER
    ids = [s["id"] for s in graders]
    assert reporter["with"]["runners"].split(",") == ids
    assert reporter["env"] == {f"{i.upper()}_RESULTS": f"${{{{steps.{i}.outputs.result}}}}" for i in ids}


def test_setup_installs_the_pinned_torch_from_the_cpu_wheels(root, steps):
    pin = re.search(r"^torch==(\S+)", (root / "constraints.txt").read_text(), flags=re.M).group(0)
    assert [s["uses"].split("@")[0] for s in steps[:2]] == ["actions/checkout", "actions/setup-python"]
    installs = [shlex.split(line) for line in steps[2]["run"].splitlines() if line.strip()]
    torch = [words for words in installs if any(w.startswith("torch") for w in words)]
    assert len(torch) == 1 and pin in torch[0], installs
    assert torch[0][torch[0].index("--index-url") + 1] == CPU_WHEELS, installs
    assert any("pytest" in words for words in installs), installs


@pytest.fixture(scope="module")
def stage_runs(root, graders, tmp_path_factory):
    """{(code, step id): exit code} of each grader's command, run as written in a copy of
    assignments/ whose attention_lab/ holds the reference as handed in ("reference") or the stubs."""
    copies = {}
    for code in ("reference", "stubs"):
        copy = copies[code] = tmp_path_factory.mktemp(code)
        for folder in ("attention_lab", "tests"):
            shutil.copytree(root / "assignments" / folder, copy / folder, ignore=shutil.ignore_patterns("__pycache__"))
    for module, source in reference_code(root).items():
        (copies["reference"] / "attention_lab" / f"{module}.py").write_text(source)

    def run(code, step):
        argv = shlex.split(step["with"]["command"])
        # PytestRun runs `sys.executable -m pytest ARGS`, that is this command with python replaced
        return (code, step["id"]), PytestRun(*argv[3:], cwd=copies[code]).result()

    with ThreadPoolExecutor(2) as pool:  # each run is mostly importing torch
        return dict(pool.map(lambda job: run(*job), [(code, s) for code in copies for s in graders]))


@pytest.mark.parametrize("code, passes", [("reference", True), ("stubs", False)])
def test_each_stage_command_awards_its_points_only_when_the_stage_is_solved(code, passes, graders, stage_runs):
    for step in graders:
        exit_code, output = stage_runs[code, step["id"]]
        assert (exit_code == 0) == passes, f"{step['id']} on the {code}:\n{output}"
        assert re.search(r"\d+ passed" if passes else r"\d+ failed", output.strip().splitlines()[-1]), output
