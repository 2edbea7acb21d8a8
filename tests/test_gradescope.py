"""The Gradescope export, run as Gradescope runs it: unzipped into a folder laid out like
/autograder, with run_autograder grading what lies in submission/."""
import html
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

import jsonschema
import pytest

from autograder.delivery.pins import dependencies, name_of
from autograder.grading.registry import all_checks, max_points, registry
from autograder.paths import runtime_files

STAGES = [1, 3]  # two stages keep it fast; stage 3 has a visible check, stage 1 none

# Gradescope's results.json, field by field as its documentation lists them ("Output format"):
# https://gradescope-autograders.readthedocs.io/en/latest/specs/
# additionalProperties is false at both levels, so a misspelt key fails here, not on Gradescope.
VISIBILITY = {"enum": ["hidden", "after_due_date", "after_published", "visible"]}
FORMAT = {"enum": ["text", "simple_format", "html", "md", "ansi"]}
TEST = {
    "type": "object",
    "properties": {
        "score": {"type": "number"},
        "max_score": {"type": "number"},
        "status": {"enum": ["passed", "failed"]},
        "name": {"type": "string"},
        "name_format": FORMAT,
        "number": {"type": "string"},
        "output": {"type": "string"},
        "output_format": FORMAT,
        "tags": {"type": "array", "items": {"type": "string"}},
        "visibility": VISIBILITY,
        "extra_data": {"type": "object"},
    },
    "additionalProperties": False,
}
RESULTS_SCHEMA = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "type": "object",
    "properties": {
        "score": {"type": "number"},
        "execution_time": {"type": "number"},
        "output": {"type": "string"},
        "output_format": FORMAT,
        "test_output_format": FORMAT,
        "test_name_format": FORMAT,
        "visibility": VISIBILITY,
        "stdout_visibility": VISIBILITY,
        "extra_data": {"type": "object"},
        "tests": {"type": "array", "items": TEST},
        "leaderboard": {"type": "array", "items": {
            "type": "object",
            "properties": {"name": {"type": "string"}, "value": {"type": ["number", "string"]},
                           "order": {"enum": ["asc", "desc"]}},
            "required": ["name", "value"],
            "additionalProperties": False,
        }},
    },
    "anyOf": [{"required": ["score"]}, {"required": ["tests"]}],  # a score, at the top or per test
    "additionalProperties": False,
}


@pytest.fixture(scope="module")
def exported(tmp_path_factory, root):
    """The zip, written by the CLI as an instructor would."""
    out = tmp_path_factory.mktemp("export") / "autograder.zip"
    stages = [arg for n in STAGES for arg in ("--stage", str(n))]
    proc = subprocess.run([sys.executable, "-m", "autograder.cli", "export", "gradescope", "--out", str(out), *stages],
                          capture_output=True, text=True, timeout=120, cwd=root)
    assert proc.returncode == 0, proc.stderr
    assert f"wrote {out}" in proc.stderr and f"{sum(max_points(n) for n in STAGES)} points" in proc.stderr
    return out


def unzip(archive, dest):
    """Unpack with the modes the zip records, as Gradescope's unzip does (zipfile drops them)."""
    with zipfile.ZipFile(archive) as z:
        for info in z.infolist():
            z.extract(info, dest)
            os.chmod(dest / info.filename, info.external_attr >> 16 & 0o7777)


def autograde(exported, tmp_path, fill, break_kit=None):
    """Run run_autograder on a submission folder that ``fill`` fills; (process, results.json)."""
    root = tmp_path / "autograder"
    unzip(exported, root / "source")
    (root / "submission").mkdir()
    (root / "results").mkdir()
    fill(root / "submission")
    if break_kit:
        break_kit(root / "source" / "kit")
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}  # the shipped kit, nothing else
    env.update(AUTOGRADER_ROOT=str(root), ATTENTION_LAB_PYTHON=sys.executable)
    proc = subprocess.run(["bash", str(root / "source" / "run_autograder")], env=env, capture_output=True,
                          text=True, timeout=600)
    results = json.loads((root / "results" / "results.json").read_text())
    jsonschema.validate(results, RESULTS_SCHEMA)
    return proc, results


def stage_of(test):
    return registry()[test["number"]].stage


def test_reference_gets_full_marks_with_each_checks_visibility(exported, tmp_path, root):
    proc, results = autograde(exported, tmp_path, lambda sub: shutil.copytree(
        root / "solutions" / "attention_lab", sub / "attention_lab"))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert f"with the kit in {tmp_path / 'autograder' / 'source' / 'kit'}" in proc.stdout  # not the checkout's
    assert results["score"] == sum(max_points(n) for n in STAGES)
    assert [t["number"] for t in results["tests"]] == [c.id for c in all_checks(set(STAGES))]
    for t in results["tests"]:
        assert t["status"] == "passed" and t["score"] == t["max_score"], t
        assert t["visibility"] == registry()[t["number"]].visibility
    assert {t["visibility"] for t in results["tests"]} == {"visible", "after_published"}


def test_bare_module_files_grade_stage_by_stage(exported, tmp_path, root):
    def fill(sub):  # a Gradescope upload: the files themselves, stage 3 still the stub
        shutil.copy(root / "solutions" / "attention_lab" / "simple.py", sub)
        shutil.copy(root / "assignments" / "attention_lab" / "causal.py", sub)

    proc, results = autograde(exported, tmp_path, fill)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert results["score"] == max_points(1)
    by_stage = {n: [t for t in results["tests"] if stage_of(t) == n] for n in STAGES}
    assert by_stage[1] and all(t["status"] == "passed" for t in by_stage[1])
    assert by_stage[3] and all(t["score"] == 0 and t["status"] == "failed" for t in by_stage[3])


def test_empty_submission_tells_the_student_what_to_upload(exported, tmp_path):
    proc, results = autograde(exported, tmp_path, lambda sub: None)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert results["score"] == 0
    assert "could not be graded" in results["output"] and "attention_lab/" in results["output"]
    assert "notebooks" in results["output"]
    assert str(tmp_path) not in results["output"]  # the student's terms, not the machine's paths
    assert "pass the folder" not in results["output"] and "a copy of assignments/" not in results["output"]
    assert [(t["score"], t["max_score"], t["visibility"]) for t in results["tests"]] == [
        (0, max_points(n), "visible") for n in STAGES]


def test_grader_failure_says_so_and_exits_1(exported, tmp_path, root):
    proc, results = autograde(exported, tmp_path, lambda sub: shutil.copytree(
        root / "solutions" / "attention_lab", sub / "attention_lab"),
        break_kit=lambda kit: (kit / "autograder" / "grading" / "golden" / "golden.pt").unlink())
    assert proc.returncode == 1
    assert results["score"] == 0 and "not your fault" in results["output"] and results["tests"] == []
    assert "Traceback" in proc.stdout  # for the staff, in Gradescope's hidden stdout


def test_zip_holds_the_scripts_and_the_kit_and_no_solutions(exported, tmp_path, root):
    with zipfile.ZipFile(exported) as z:
        names = z.namelist()
        modes = {i.filename: i.external_attr >> 16 for i in z.infolist()}
        golden = {name: z.read(f"kit/autograder/grading/golden/{name}") for name in ("golden.pt", "forms.json")}
        config = json.loads(z.read("kit/gradescope.json"))
        setup = z.read("setup.sh").decode()
    assert not [n for n in names if "solutions" in n.split("/") or "__pycache__" in n or n.endswith(".pyc")]
    kit = sorted(n for n in names if n.startswith("kit/autograder/"))
    assert kit == sorted(f"kit/{p.relative_to(root).as_posix()}" for p in runtime_files())  # the runtime package
    assert {p.relative_to(root).parts[0] for p in runtime_files()} == {"autograder"}
    assert not [n for n in names if "bench" in n or "zoo" in n or n.startswith(("kit/tests/", "kit/tools/"))]
    assert golden == {name: (root / "autograder" / "grading" / "golden" / name).read_bytes() for name in golden}
    assert config == {"stages": STAGES, "points": {}, "require_isolation": False,
                      "gradescope": {"hidden": "after_published", "leaderboard": True}}
    assert "sys.version_info < (3, 10)" in setup and "Ubuntu 22.04" in setup
    # Every dependency of pyproject.toml, torch from PyTorch's CPU index, each pinned by the shipped
    # constraints.txt, and the system library the syscall filter's bindings load.
    installs = [line for line in setup.splitlines() if "/bin/pip\" install" in line]
    assert len(installs) == 2 and all('-c "$CONSTRAINTS"' in line for line in installs), installs
    assert "--index-url https://download.pytorch.org/whl/cpu" in installs[0] and "'torch" in installs[0]
    assert 'CONSTRAINTS="$ROOT/source/kit/constraints.txt"' in setup
    required = [arg for line in installs for arg in shlex.split(line)[shlex.split(line).index("$CONSTRAINTS") + 1:]]
    assert sorted(map(name_of, required)) == sorted(name_of(r) for r in dependencies())
    assert re.search(r"apt-get install .*\blibseccomp2\b", setup)
    unzip(exported, tmp_path)
    for script in ("setup.sh", "run_autograder"):
        assert modes[script] & 0o777 == 0o755
        assert os.access(tmp_path / script, os.X_OK)
        proc = subprocess.run(["bash", "-n", str(tmp_path / script)], capture_output=True, text=True)
        assert proc.returncode == 0, proc.stderr


def test_tags_leaderboard_and_the_courses_visibility(root):
    """Each test carries its stage and kind as tags; stage 8's measured speed ratio goes on the
    leaderboard; hidden checks show when the course configuration says."""
    from autograder.grading.config import from_data
    from autograder.grading.grade import grade
    from autograder.grading.results import PASSED, CheckResult, Graded

    config = from_data({"gradescope": {"hidden": "after_due_date"}})
    data = grade(root / "solutions", stages={1}, config=config).gradescope()
    jsonschema.validate(data, RESULTS_SCHEMA)
    assert {t["visibility"] for t in data["tests"]} == {"after_due_date"}  # stage 1 has no visible check
    assert all(t["tags"] == ["stage 1", t["number"].rsplit(".", 1)[1]] for t in data["tests"])
    assert "leaderboard" not in data
    speed = CheckResult("s8.speed", 8, "fast", 2, PASSED, "passed\nratio 1.4", "visible", {"speed ratio": 1.4})
    data = Graded([speed], 1.0).gradescope()
    jsonschema.validate(data, RESULTS_SCHEMA)
    assert data["leaderboard"] == [{"name": "speed ratio", "value": 1.4, "order": "asc"}]
    assert "leaderboard" not in Graded([speed], 1.0).gradescope(leaderboard=False)


def test_a_failed_checks_picture_is_inline_html_in_its_output(exported, tmp_path, root):
    """A causal layer that leaks (its mask is the wrong way round): the no_leak check's output is
    HTML holding the feedback and the leak map as an inline image; a passed check stays text."""
    from tools.zoo import assemble, read_entry

    entry = root / "tests" / "zoo" / "wrong" / "mask_polarity_inverted.py"

    def fill(sub):
        shutil.copytree(assemble(entry, read_entry(entry), tmp_path / "leaky") / "attention_lab", sub / "attention_lab")

    proc, results = autograde(exported, tmp_path, fill)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    by_id = {t["number"]: t for t in results["tests"]}
    leak = by_id["s3.causal.no_leak"]
    assert leak["status"] == "failed" and leak["output_format"] == "html"
    assert leak["output"].startswith('<pre style="white-space: pre-wrap">') and 'data-picture="leak"' in leak["output"]
    said = html.unescape(leak["output"].partition(">")[2].partition("</pre>")[0])
    assert max(map(len, said.splitlines())) <= 110, "a long line of feedback would be cut off in Gradescope's block"
    assert "changing tokens" in " ".join(said.split())  # the words themselves, only wrapped
    assert 'src="data:image/svg+xml;base64,' in leak["output"] and "<script" not in leak["output"]
    alts = re.findall(r'<img alt="([^"]*)"', leak["output"])  # what each picture shows, for a screen reader
    assert alts and all(a and a != leak["name"] for a in alts), alts
    passed = by_id["s1.scores_loop"]
    assert passed["status"] == "passed" and "output_format" not in passed
    assert not [t for t in results["tests"] if "pictures" in t.get("extra_data", {})]  # moved into the output


def test_grade_json_is_the_runners_results_json(exported, tmp_path, root):
    """One serialiser: ``attention-lab grade --json`` writes what Gradescope's runner writes for the same
    submission and course, a failed check's pictures inline in its output, so that an instructor's trial
    run shows what students will see. Only the run's time differs (and the grading user's number, where
    another grading beside held the first)."""
    import re

    from autograder.cli import main
    from tools.zoo import assemble, read_entry

    entry = root / "tests" / "zoo" / "wrong" / "mask_polarity_inverted.py"
    leaky = assemble(entry, read_entry(entry), tmp_path / "leaky")
    proc, runner = autograde(exported, tmp_path,
                             lambda sub: shutil.copytree(leaky / "attention_lab", sub / "attention_lab"))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    out = tmp_path / "grade.json"
    assert main(["grade", str(leaky), *[a for n in STAGES for a in ("--stage", str(n))], "--json", str(out)]) == 0
    ours = json.loads(out.read_text())
    assert any(t.get("output_format") == "html" for t in ours["tests"])  # pictures too, not plain text alone

    def compared(data):
        data = {k: v for k, v in data.items() if k != "execution_time"}
        return json.loads(re.sub(r"uid \d+", "uid N", json.dumps(data)))

    assert compared(ours) == compared(runner)



def test_every_dependency_must_be_pinned_by_constraints_txt(tmp_path, root):
    """The zip installs pyproject.toml's dependencies at the versions constraints.txt pins; a dependency
    it does not pin is refused by name at export, not left to whatever PyPI holds that day."""
    from autograder.delivery.pins import dependencies
    from autograder.errors import BuildError

    shutil.copy(root / "pyproject.toml", tmp_path)
    constraints = (root / "constraints.txt").read_text()
    (tmp_path / "constraints.txt").write_text(constraints)
    assert dependencies(tmp_path) == dependencies(root)
    (tmp_path / "constraints.txt").write_text(re.sub(r"(?m)^tomli==.*\n", "", constraints))
    with pytest.raises(BuildError, match=r"constraints.txt pins no version of tomli,"):
        dependencies(tmp_path)


# ---------------------------------------------------------------- the image setup.sh builds
#
# Gradescope builds the autograder's image from setup.sh alone, and grades in a container: these tests
# build an environment from setup.sh's lines and grade with run_autograder in it, as Gradescope does, and
# compare what held the grading with what holds the kit's own (DESIGN.md, principle 12). What cannot be
# tested here, and why:
# - setup.sh's torch line runs without its `--index-url`: PyTorch's CPU index is out of reach of the
#   machines the kit is tested on (they reach PyPI and Debian's mirror). pip then takes torch 2.13.0 from
#   the folder of wheels its configuration names (a CPU build), where Gradescope takes the same version
#   from PyTorch's CPU index. Every other line runs as written, apt-get's included (as root).
# - Gradescope's Ubuntu 22.04 image has Python 3.10, and torch 2.13.0 for 3.10 cannot be fetched here
#   (PyPI's is a CUDA build of several GB; the CPU index is out of reach). So the whole image is built
#   and grades with Python 3.11 (the python3 apt-get installs on Debian), and with 3.10 every line but
#   torch's runs, and what differs there is checked without grading: the pinned versions for 3.10, the
#   layers' bindings, and the course configuration read through tomli (3.10 has no tomllib).
# - A Gradescope container itself: its mode (no namespaces, as Docker's default seccomp profile refuses
#   unshare; no cgroup, whose tree Docker mounts read-only; no tmpfs, without CAP_SYS_ADMIN) is made by
#   taking those away in the grading process (``IN_A_CONTAINER``), as tests/test_isolation.py takes layers.

COURSE = """\
stages = [1, 3]
[points]
"s3.causal.no_leak" = 7
[gradescope]
hidden = "after_due_date"
"""
SYSTEM_PYTHON = "/usr/bin/python3"  # where apt-get puts Debian's and Ubuntu's python3, as on Gradescope
# Python 3.10 (Gradescope's Ubuntu 22.04 has it): the one this variable names, python3.10 on PATH, or pyenv's.
PYTHON_310 = os.environ.get("ATTENTION_LAB_PYTHON310", "python3.10")
# run_autograder's `$PYTHON -m autograder.delivery.gradescope --root ROOT`, run as in a Docker container
# with Docker's defaults: no namespace (its seccomp profile refuses unshare), no cgroup of the grader's
# (the tree is read-only), no tmpfs (no CAP_SYS_ADMIN to mount one).
IN_A_CONTAINER = """\
import os, runpy, sys
sys.path[0] = os.getcwd()  # as `python -m` in the kit's folder has it
from autograder.sandbox import protocol, world
protocol.KERNEL_LAYERS = tuple(layer for layer in protocol.KERNEL_LAYERS if layer not in ("namespaces", "cgroup"))
def no_tmpfs(*args, **kwargs):
    raise world.NoRoot("mount: Operation not permitted")
world.tmpfs = no_tmpfs
sys.argv = sys.argv[2:]  # ["-c", "-m", module, "--root", ROOT]: the module and its arguments
runpy.run_module(sys.argv[0], run_name="__main__", alter_sys=True)
"""


def python_310():
    """A Python 3.10 to build with, or None: the one named (or python3.10 on PATH), else one that pyenv
    installed, asked of pyenv itself (its shim runs a version only where one is chosen)."""
    candidates = [shutil.which(PYTHON_310)]
    if shutil.which("pyenv"):
        versions = subprocess.run(["pyenv", "versions", "--bare"], capture_output=True, text=True).stdout.split()
        for version in (v for v in versions if v.startswith("3.10")):
            prefix = subprocess.run(["pyenv", "prefix", version], capture_output=True, text=True).stdout.strip()
            candidates.append(str(Path(prefix) / "bin" / "python3.10") if prefix else None)
    for found in filter(None, candidates):
        said = subprocess.run([found, "-c", "import sys; print(sys.version_info[:2] == (3, 10))"],
                              capture_output=True, text=True)
        if said.stdout.strip() == "True":
            return found
    return None


@pytest.fixture(scope="module")
def configured(tmp_path_factory, root):
    """(the zip for the course configuration ``COURSE``, that configuration's file), exported as an
    instructor exports it."""
    folder = tmp_path_factory.mktemp("configured")
    (folder / "attention-lab.toml").write_text(COURSE)
    out = folder / "autograder.zip"
    proc = subprocess.run([sys.executable, "-m", "autograder.cli", "export", "gradescope", "--out", str(out),
                           "--config", str(folder / "attention-lab.toml")],
                          capture_output=True, text=True, timeout=120, cwd=root)
    assert proc.returncode == 0, proc.stderr
    return out, folder / "attention-lab.toml"


def build_image(archive, python, torch=True):
    """A folder laid out like /autograder, with the environment setup.sh's lines build in it (python3:
    ``python``); without ``torch``, every line but torch's. Its folders are open to others, as /autograder
    is: where no namespace gives the child a root of its own, its unprivileged user reads Python there."""
    from autograder.delivery.pins import CPU_WHEELS, pin

    from tests.test_isolation import needs

    needs(os.geteuid() == 0 and shutil.which("apt-get"), "setup.sh runs apt-get, as root")
    with tempfile.TemporaryDirectory() as folder:  # a machine with no package index (a GPU's) builds nothing
        probe = subprocess.run([sys.executable, "-m", "pip", "download", "--quiet", "--no-deps", "--dest", folder,
                                pin("pyseccomp")], capture_output=True, text=True, timeout=300)
    needs(probe.returncode == 0, f"pip reaches no index here that holds {pin('pyseccomp')}: {probe.stderr[-300:]}")
    image = Path(tempfile.mkdtemp(prefix="gradescope-image-"))
    image.chmod(0o755)
    unzip(archive, image / "source")
    setup = (image / "source" / "setup.sh").read_text()
    index = f"--index-url {CPU_WHEELS} "
    assert setup.count(index) == 1
    if torch:
        setup = setup.replace(index, "")  # PyTorch's CPU index is out of reach here
    else:
        setup = "\n".join(line for line in setup.splitlines() if index not in line)
    (image / "bin").mkdir()
    (image / "bin" / "python3").symlink_to(python)
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    env.update(AUTOGRADER_ROOT=str(image), PATH=f"{image / 'bin'}{os.pathsep}{env.get('PATH', '')}")
    done = subprocess.run(["bash", "-c", setup], env=env, capture_output=True, text=True, timeout=1200)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    return image


def run_image(image, fill, in_a_container=False):
    """run_autograder in ``image`` (``build_image``) on the submission ``fill`` fills, with the image's own
    Python; ``in_a_container``: as a Docker container runs it (``IN_A_CONTAINER``). (process, results.json)"""
    for name in ("submission", "results"):
        shutil.rmtree(image / name, ignore_errors=True)
        (image / name).mkdir(mode=0o755)
    fill(image / "submission")
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV", "ATTENTION_LAB_PYTHON")}
    env["AUTOGRADER_ROOT"] = str(image)
    if in_a_container:
        wrapper = image / "python-in-a-container"
        python = image / "venv" / "bin" / "python"
        wrapper.write_text(f"#!/bin/sh\nexec {python} -c {shlex.quote(IN_A_CONTAINER)} \"$@\"\n")
        wrapper.chmod(0o755)
        env["ATTENTION_LAB_PYTHON"] = str(wrapper)
    proc = subprocess.run(["bash", str(image / "source" / "run_autograder")], env=env, capture_output=True,
                          text=True, timeout=600)
    results = json.loads((image / "results" / "results.json").read_text())
    jsonschema.validate(results, RESULTS_SCHEMA)
    return proc, results


def installed(python, names):
    """{name: version} of the distributions ``names`` in ``python``'s environment."""
    script = ("import importlib.metadata as m, json, sys\n"
              "print(json.dumps({n: m.version(n) for n in sys.argv[1:]}))")
    done = subprocess.run([str(python), "-c", script, *names], capture_output=True, text=True, check=True)
    return json.loads(done.stdout)


def pinned(root, python_version):
    """{name: version} constraints.txt pins for each dependency of pyproject.toml that Python
    ``python_version`` (on Linux) installs."""
    from packaging.requirements import Requirement

    where = {"python_version": python_version, "python_full_version": f"{python_version}.0", "sys_platform": "linux"}
    wanted = {name_of(r) for r in dependencies(root)
              if Requirement(r).marker is None or Requirement(r).marker.evaluate(where)}
    pins = [Requirement(line.split("#")[0]) for line in (root / "constraints.txt").read_text().splitlines()
            if line.split("#")[0].strip()]
    return {name_of(p.name): str(p.specifier).removeprefix("==") for p in pins
            if name_of(p.name) in wanted and (p.marker is None or p.marker.evaluate(where))}


@pytest.fixture(scope="module")
def image(configured, root):
    """The image setup.sh builds for the configured zip, with Python 3.11 (``build_image``)."""
    from tests.test_isolation import needs

    needs(os.path.exists(SYSTEM_PYTHON), f"no {SYSTEM_PYTHON}: setup.sh's apt-get line installs it")
    built = build_image(configured[0], SYSTEM_PYTHON)
    yield built
    shutil.rmtree(built, ignore_errors=True)


@pytest.mark.slow  # an environment built as Gradescope builds it: about a minute
def test_the_image_setup_sh_builds_grades_with_the_kits_own_layers(image, configured, root, tmp_path):
    """An image built from setup.sh's lines holds every dependency at its pinned version, and grades a
    submission as the kit's own environment grades it, under the same isolation, report for report."""
    from packaging.version import Version

    from autograder.delivery.gradescope import ISOLATION_NOTE
    from autograder.grading.config import read_config
    from autograder.grading.grade import grade
    from autograder.sandbox.runner import shortfall

    python = image / "venv" / "bin" / "python"
    versions = installed(python, pinned(root, "3.11"))
    assert {n: Version(v).public for n, v in versions.items()} == pinned(root, "3.11")  # torch's +cpu aside
    proc, results = run_image(image, lambda sub: shutil.copytree(
        root / "solutions" / "attention_lab", sub / "attention_lab"))
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    config = read_config(configured[1])
    assert results["score"] == config.max_points() and config.max_points() != sum(max_points(n) for n in STAGES)
    assert {t["visibility"] for t in results["tests"]} == {"visible", "after_due_date"}
    ours = grade(root / "solutions", config=config)

    def held(isolation):  # the grading user's number differs where another grading beside held the first
        return json.loads(re.sub(r"uid \d+", "uid N", json.dumps(isolation)))

    assert held(results["extra_data"]["isolation"]) == held(ours.isolation)
    note = ISOLATION_NOTE.split("{}")[0]
    assert (note in results.get("output", "")) == bool(shortfall(ours.isolation)), results.get("output")
    assert "isolation: user: uid" in proc.stdout  # the whole list, for the staff (stdout is theirs)


@pytest.mark.slow  # an environment built as Gradescope builds it: about a minute
def test_in_a_gradescope_container_the_image_grades_with_landlock_and_the_filter(image, configured, root):
    """As a Docker container with Docker's defaults runs it (no namespaces, no cgroup, no tmpfs): the
    reference gets full marks and the stubs 0; the files are held by Landlock, the network, processes,
    memory and IPC by the syscall filter, the disk by nothing of the kernel's; and every results.json says
    which of the kit's layers were missing, above the tests."""
    from autograder.delivery.gradescope import ISOLATION_NOTE
    from autograder.grading.config import read_config
    from autograder.sandbox import world

    from tests.test_isolation import needs

    needs(world.landlock_abi() > 0, "this kernel has no Landlock")
    for package, score in (("solutions", read_config(configured[1]).max_points()), ("assignments", 0)):
        proc, results = run_image(image, lambda sub: shutil.copytree(
            root / package / "attention_lab", sub / "attention_lab"), in_a_container=True)
        assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
        assert results["score"] == score, (package, [t["output"] for t in results["tests"] if t["status"] == "failed"])
        isolation = results["extra_data"]["isolation"]
        assert isolation["files"] == "kernel" and "Landlock" in isolation["filesystem"], isolation
        assert all("seccomp" in isolation[r] for r in ("network", "processes", "memory", "ipc")), isolation
        assert isolation["not_kernel"] == ["disk"], isolation
        assert list(isolation["missing"]) == ["namespaces", "cgroup"], isolation
        assert isolation["lost"] == {"files": ["namespaces"], "network": ["namespaces"],
                                     "processes": ["namespaces", "cgroup"], "memory": ["cgroup"],
                                     "disk": ["namespaces"], "ipc": ["namespaces"]}, isolation
        said = results["output"]
        assert ISOLATION_NOTE.split("{}")[0] in said, said  # after what the student should know
        assert "graded without namespaces (no network, IPC or PID namespace" in said and "cgroup (" in said, said
        assert "disk held by no kernel layer" in said, said
        assert "[MISSING: graded without namespaces" in proc.stdout  # the staff's whole list


@pytest.mark.slow  # an environment built as Gradescope builds it: about a minute
def test_python_310_gets_every_dependency_but_torch_and_reads_a_course_configuration(configured, root):
    """Gradescope's Ubuntu 22.04 has Python 3.10: setup.sh's lines but torch's (see above) give it every
    other dependency at the version constraints.txt pins for 3.10, both layers' bindings load, and the
    kit's reader of a course configuration reads it there through tomli as 3.11 reads it through tomllib.
    (Only the TOML: making a configuration of what was read looks up its checks, which imports torch.)"""
    from autograder.common import toml

    python = python_310()
    if python is None:  # a property of the machine, not of its isolation: skipped, never failed, without one
        pytest.skip("no Python 3.10 here: put python3.10 on PATH, or name one in ATTENTION_LAB_PYTHON310")
    image = build_image(configured[0], python, torch=False)
    try:
        venv = image / "venv" / "bin" / "python"
        but_torch = {n: v for n, v in pinned(root, "3.10").items() if n != "torch"}
        assert installed(venv, but_torch) == but_torch
        assert "tomli" in pinned(root, "3.10") and "tomli" not in pinned(root, "3.11")
        script = ("import json, sys\n"
                  "from pathlib import Path\n"
                  "from autograder.common import toml\n"
                  "from autograder.sandbox import syscalls, world\n"
                  "print(json.dumps({'reader': toml.tomllib.__name__,"
                  " 'read': toml.loads(Path(sys.argv[1]).read_text()),"
                  " 'seccomp': syscalls.unavailable(), 'landlock': world.landlock_unavailable()}))")
        done = subprocess.run([str(venv), "-c", script, str(configured[1])], cwd=image / "source" / "kit",
                              capture_output=True, text=True)
        assert done.returncode == 0, done.stderr
        said = json.loads(done.stdout)
        assert said["reader"] == "tomli"  # 3.10 has no tomllib
        assert said["read"] == toml.loads(COURSE) and said["read"]["points"] == {"s3.causal.no_leak": 7}
        assert said["seccomp"] is None, said  # pyseccomp and the system's libseccomp, loaded
        assert said["landlock"] is None or "kernel" in said["landlock"], said  # the bindings are there
    finally:
        shutil.rmtree(image, ignore_errors=True)
