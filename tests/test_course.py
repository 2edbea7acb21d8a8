"""The nbgrader course as files: what ``attention-lab nbgrader init`` writes (no nbgrader run here;
tests/test_nbgrader.py runs the real thing)."""
import json

import pytest
from traitlets.config.loader import PyFileConfigLoader

from autograder.authoring.build import planned_files
from autograder.authoring.course import DEFAULT_ASSIGNMENT, init_course, notebook_name, planned_course
from autograder.cli import main
from autograder.curriculum import STAGES
from autograder.errors import BuildError
from autograder.grading.grade import plan
from autograder.grading.registry import all_checks
from autograder.intake.notebooks import module_of, source_text
from autograder.markers import strip_solutions
from autograder.sandbox.runner import worst_case_s

SOURCE = f"source/{DEFAULT_ASSIGNMENT}"


@pytest.fixture(scope="module")
def files():
    return planned_course()


def notebook(files, stage):
    return json.loads(files[f"{SOURCE}/{notebook_name(stage)}.ipynb"])


def nbgrader_meta(cell):
    return cell["metadata"]["nbgrader"]


@pytest.mark.parametrize("stage", STAGES.values(), ids=lambda s: s.module)
def test_grade_cells_carry_the_registrys_checks_and_points(files, stage):
    cells = notebook(files, stage)["cells"]
    graded = {nbgrader_meta(c)["grade_id"]: nbgrader_meta(c)["points"] for c in cells if nbgrader_meta(c)["grade"]}
    checks = all_checks({stage.number})
    assert graded == {c.id.replace(".", "-"): c.points for c in checks}
    ids = [nbgrader_meta(c)["grade_id"] for c in cells]
    assert len(ids) == len(set(ids)), "grade ids must be unique within a notebook"
    for cell, check in zip([c for c in cells if nbgrader_meta(c)["grade"]], checks):
        assert nbgrader_meta(cell)["locked"] and f'check("{check.id}")' in source_text(cell)


@pytest.mark.parametrize("stage", STAGES.values(), ids=lambda s: s.module)
def test_the_module_cell_is_the_solution_and_strips_to_the_stub(files, stage, root):
    cells = [c for c in notebook(files, stage)["cells"] if c["cell_type"] == "code"]
    saved = [(c, module_of(source_text(c))) for c in cells]
    (cell, (module, code)), = [(c, s) for c, s in saved if s]
    assert module == stage.module and nbgrader_meta(cell)["solution"] and not nbgrader_meta(cell)["locked"]
    assert code == (root / "solutions" / "attention_lab" / f"{module}.py").read_text()
    stub = planned_files(root)[root / "assignments" / "attention_lab" / f"{module}.py"].decode()
    assert strip_solutions(code) == stub == files[f"{SOURCE}/attention_lab/{module}.py"].decode()


def test_config_loads_and_gives_grade_cells_the_runners_bound(files, tmp_path):
    (tmp_path / "nbgrader_config.py").write_bytes(files["nbgrader_config.py"])
    config = PyFileConfigLoader("nbgrader_config.py", path=str(tmp_path)).load_config()
    bound = max(worst_case_s(plan(all_checks({n}), {"cpu", "meta", "cuda"})) for n in STAGES)
    assert config.Execute.timeout >= bound > 30  # 30 s: nbgrader's default, which would cut a stage short
    kept = set(config.Autograde.exclude_overwriting[DEFAULT_ASSIGNMENT])
    assert kept == {rel.removeprefix(f"{SOURCE}/") for rel in files if rel.startswith(f"{SOURCE}/attention_lab/")}
    assert config.GenerateAssignment.preprocessors[0] == "autograder.release_guard.ReleaseGuard"


def test_init_never_overwrites_an_edited_file_without_force(tmp_path, capsys):
    course = tmp_path / "course"
    assert main(["nbgrader", "init", str(course)]) == 0
    config = course / "nbgrader_config.py"
    config.write_text(config.read_text() + "c.Exchange.root = '/srv/exchange'\n")
    edited = config.read_text()
    (course / SOURCE / "stage1_simple.ipynb").unlink()
    assert main(["nbgrader", "init", str(course)]) == 2
    assert "nothing was written" in capsys.readouterr().err
    assert config.read_text() == edited and not (course / SOURCE / "stage1_simple.ipynb").exists()
    assert main(["nbgrader", "init", str(course), "--force"]) == 0
    assert config.read_bytes() == planned_course()["nbgrader_config.py"]
    assert (course / SOURCE / "stage1_simple.ipynb").exists()
    assert main(["nbgrader", "init", str(course)]) == 0, "init on an up-to-date course is a no-op"


def test_assignment_names_nbgrader_cannot_use_are_refused(tmp_path):
    with pytest.raises(BuildError, match="letters, digits"):
        init_course(tmp_path, assignment="../escape")
    assert not any(tmp_path.iterdir())
