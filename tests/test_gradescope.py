"""The Gradescope export, run as Gradescope runs it: unzipped into a folder laid out like
/autograder, with run_autograder grading what lies in submission/."""
import html
import json
import os
import shutil
import subprocess
import sys
import zipfile

import jsonschema
import pytest

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
    pin = next(line.split("#")[0].strip() for line in (root / "constraints.txt").read_text().splitlines()
               if line.startswith("torch=="))
    assert f'"{pin}"' in setup and "--index-url https://download.pytorch.org/whl/cpu" in setup
    assert "sys.version_info < (3, 10)" in setup and "Ubuntu 22.04" in setup
    assert '"landlockpy==' in setup  # the kernel's allow-list for graded code, at the pinned version
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

