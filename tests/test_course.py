"""The nbgrader course as files: what ``attention-lab nbgrader init`` writes (no nbgrader run here;
tests/test_nbgrader.py runs the real thing)."""
import json
import os
import re
import shutil

import pytest
from nbformat import from_dict
from traitlets.config.loader import PyFileConfigLoader

from autograder.authoring.build import planned_files
from autograder.authoring.course import (AUTOGRADING, BEGIN_BLOCK, DEFAULT_ASSIGNMENT, NOT_RUN,
                                         OTHER_CELL_TIMEOUT_S, init_course, notebook_name, planned_course,
                                         stage_notebook)
from autograder.cli import main
from autograder.curriculum import STAGES
from autograder.delivery.nbgrader.pipelines import runs_public_checks
from autograder.delivery.nbgrader.release_guard import refuse_solutions
from autograder.errors import BuildError
from autograder.grading.config import from_data
from autograder.grading.grade import worst_case
from autograder.grading.registry import all_checks, declared
from autograder.intake.notebooks import module_of, source_text
from autograder.common.markers import strip_solutions

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
    graded = [c for c in cells if nbgrader_meta(c)["grade"] and not runs_public_checks(nbgrader_meta(c)["grade_id"])]
    checks = all_checks({stage.number})
    assert {nbgrader_meta(c)["grade_id"]: nbgrader_meta(c)["points"] for c in graded} == \
        {c.id.replace(".", "-"): c.points for c in checks}
    ids = [nbgrader_meta(c)["grade_id"] for c in cells]
    assert len(ids) == len(set(ids)), "grade ids must be unique within a notebook"
    for cell, check in zip(graded, checks):
        assert nbgrader_meta(cell)["locked"] and f'check("{check.id}")' in source_text(cell)


@pytest.mark.parametrize("stage", STAGES.values(), ids=lambda s: s.module)
def test_each_public_check_has_a_locked_cell_of_0_points_that_asserts_it(files, stage, root):
    """nbgrader's Validate reports the grade cells that fail, one of 0 points too: a cell per public test of
    the stage, in the file's order, and no points added to the notebook's."""
    cells = [c for c in notebook(files, stage)["cells"] if runs_public_checks(nbgrader_meta(c)["grade_id"])]
    path = root / "assignments" / "tests" / f"test_stage{stage.number}_{stage.module}.py"
    tests = re.findall(r"^def (test_\w+)\(", path.read_text(), flags=re.M)
    assert len(cells) == len(tests) >= 1  # every stage has self-checks, an instructor's of one test too
    for cell, test in zip(cells, tests):
        meta = nbgrader_meta(cell)
        assert meta["grade"] and meta["locked"] and meta["points"] == 0 and not meta["solution"], meta
        code = source_text(cell)
        assert f'"tests/{path.name}",' in code and f'"{test}")' in code and code.endswith("assert passed, said")


@pytest.mark.parametrize("stage", STAGES.values(), ids=lambda s: s.module)
def test_the_module_cell_is_the_solution_and_strips_to_the_stub(files, stage, root):
    cells = [c for c in notebook(files, stage)["cells"] if c["cell_type"] == "code"]
    saved = [(c, module_of(source_text(c))) for c in cells]
    (cell, (module, code)), = [(c, s) for c, s in saved if s]
    assert module == stage.module and nbgrader_meta(cell)["solution"] and not nbgrader_meta(cell)["locked"]
    assert code == (root / "solutions" / "attention_lab" / f"{module}.py").read_text()
    stub = planned_files(root)[root / "assignments" / "attention_lab" / f"{module}.py"].decode()
    assert strip_solutions(code) == stub == files[f"{SOURCE}/attention_lab/{module}.py"].decode()


def test_config_loads_and_gives_each_grade_cell_its_stages_bound_and_other_cells_a_short_one(files, tmp_path):
    """nbgrader's own Execute, made from the course's config, asked for each cell's timeout as it asks
    before running the cell: a grade cell gets its stage's worst case in the runner, a cell that decides no
    points (a public check's, the module's) the course's bound for such cells."""
    from nbgrader.preprocessors import Execute

    (tmp_path / "nbgrader_config.py").write_bytes(files["nbgrader_config.py"])
    config = PyFileConfigLoader("nbgrader_config.py", path=str(tmp_path)).load_config()
    execute = Execute(config=config)
    assert execute.timeout == OTHER_CELL_TIMEOUT_S > 30  # 30 s: nbgrader's default, which would cut a cell short
    bounds = {}
    for stage in STAGES.values():
        worst = worst_case(all_checks({stage.number}), {"cpu", "meta", "cuda"})
        for cell in notebook(files, stage)["cells"]:
            meta = nbgrader_meta(cell)
            if cell["cell_type"] != "code":
                continue
            timeout = execute._get_timeout(from_dict(cell))
            if meta["grade"] and not runs_public_checks(meta["grade_id"]):
                assert worst < timeout <= worst + 1, (meta["grade_id"], timeout, worst)
                bounds[stage.number] = timeout
            else:
                assert timeout == OTHER_CELL_TIMEOUT_S < worst, (meta["grade_id"], timeout)
    assert len(set(bounds.values())) > 1, "every stage got the slowest stage's bound"
    kept = set(config.Autograde.exclude_overwriting[DEFAULT_ASSIGNMENT])
    assert kept == {rel.removeprefix(f"{SOURCE}/") for rel in files if rel.startswith(f"{SOURCE}/attention_lab/")}
    assert config.GenerateAssignment.pre_convert_hook is refuse_solutions
    assert "autograder.delivery.nbgrader.preprocessors.OverwriteCellsQuietly" in \
        config.Autograde.sanitize_preprocessors


def test_init_merges_keeps_the_instructors_settings_and_edits_and_says_what_changed(tmp_path, capsys):
    course = tmp_path / "course"
    assert main(["nbgrader", "init", str(course)]) == 0
    assert "created: nbgrader_config.py" in capsys.readouterr().err
    config = course / "nbgrader_config.py"
    config.write_text("c = get_config()\nc.Exchange.root = '/srv/exchange'\n" + config.read_text()
                      + "c.Exchange.path_includes_course = True\n")
    edited = course / SOURCE / "stage2_self_attention.ipynb"
    edited.write_text(edited.read_text().replace("# Stage 2", "# Stage 2 (week 3)"))
    (course / SOURCE / "stage1_simple.ipynb").unlink()
    for force in (False, True):
        assert main(["nbgrader", "init", str(course), *(["--force"] if force else [])]) == 0
        said = capsys.readouterr().err
        text = config.read_text()
        assert "c.Exchange.root = '/srv/exchange'" in text and "c.Exchange.path_includes_course = True" in text
        assert text.count(BEGIN_BLOCK) == 1 and planned_course()["nbgrader_config.py"].decode().strip() in text
        assert (course / SOURCE / "stage1_simple.ipynb").exists()
        assert ("(week 3)" in edited.read_text()) != force
        assert ("kept (edited since init wrote it" in said) != force and ("stage2_self_attention.ipynb" in said)
    assert main(["nbgrader", "init", str(course)]) == 0
    assert "(nothing changed)" in capsys.readouterr().err, "init on an up-to-date course is a no-op"


def test_a_course_configuration_picks_the_notebooks_and_their_points(tmp_path):
    config = from_data({"stages": [1, 3], "points": {"stage3": 30}})
    files = planned_course(config=config)
    notebooks = sorted(rel for rel in files if rel.endswith(".ipynb"))
    assert notebooks == [f"{SOURCE}/stage1_simple.ipynb", f"{SOURCE}/stage3_causal.ipynb"]
    cells = json.loads(files[f"{SOURCE}/stage3_causal.ipynb"])["cells"]
    assert sum(nbgrader_meta(c).get("points", 0) for c in cells if nbgrader_meta(c)["grade"]) == 30
    assert "30 points" in source_text(cells[0])


def test_assignment_names_nbgrader_cannot_use_are_refused(tmp_path):
    with pytest.raises(BuildError, match="letters, digits"):
        init_course(tmp_path, assignment="../escape")
    assert not any(tmp_path.iterdir())


def test_import_without_nbgrader_is_refused_before_anyone_is_graded(tmp_path, monkeypatch, capsys):
    import importlib.util

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "nbgrader" else real(name, *a))
    (tmp_path / "submitted" / "ann" / DEFAULT_ASSIGNMENT).mkdir(parents=True)
    assert main(["nbgrader", "import", str(tmp_path)]) == 2
    said = capsys.readouterr().err
    assert "nbgrader is not installed" in said and "grading" not in said.split("nbgrader is not installed")[0]


@pytest.mark.parametrize("stage", [n for n, checks in declared().items() if not checks.looked])
def test_a_stage_that_declares_no_look_has_no_look_cell(stage):
    """A stage with no softmax weights to draw (stage 10's model, an instructor's linear attention) leaves
    ``Checks.look`` out, and its notebook has no cell asking for them."""
    cells = stage_notebook(STAGES[stage], "", None)["cells"]
    assert not [c for c in cells if "-look" in c["metadata"].get("nbgrader", {}).get("grade_id", "")]
    assert not [c for c in cells if "Look at your attention" in "".join(c["source"])]


@pytest.mark.parametrize("stage", [n for n, checks in declared().items() if checks.looked])
def test_the_look_cell_draws_the_reference_and_asks_for_code_on_the_stubs(stage, root, tmp_path):
    """The "Look at your attention" cell, run as a notebook runs it (beside tests/ and attention_lab/),
    with IPython's display stood in for: pictures for the reference, a sentence for the stubs."""
    import subprocess
    import sys

    (cell,) = [c for c in stage_notebook(STAGES[stage], "", None)["cells"]
               if c["metadata"].get("nbgrader", {}).get("grade_id", "").endswith("-look")]
    code = "def display(found): print('drew', len(found), [p.flagged for p in found])\n" + "".join(cell["source"])
    for name, package in (("reference", root / "solutions" / "attention_lab"),
                          ("stubs", root / "assignments" / "attention_lab"),
                          ("warns", root / "solutions" / "attention_lab")):
        folder = tmp_path / name
        shutil.copytree(root / "assignments" / "tests", folder / "tests")
        shutil.copytree(package, folder / "attention_lab")
        if name == "warns":  # a warning of the student's: one line, where in their file, not the folder's whole path
            module = folder / "attention_lab" / f"{STAGES[stage].module}.py"
            module.write_text(module.read_text() + "\nimport warnings\nwarnings.warn('my own warning')\n")
        said = subprocess.run([sys.executable, "-c", code], cwd=folder, capture_output=True, text=True, timeout=120)
        assert said.returncode == 0, said.stderr
        if name == "warns":
            line = len(module.read_text().splitlines())
            assert f"UserWarning at attention_lab/{module.name} line {line}: my own warning" in said.stdout, said
            assert str(folder) not in said.stdout + said.stderr, said
        elif name == "reference":
            drew, count, flagged = said.stdout.split(" ", 2)
            assert drew == "drew" and int(count) >= 1 and set(eval(flagged)) == {0}, said.stdout  # nothing in red
        else:
            assert "Not written yet" in said.stdout, said.stdout


@pytest.mark.parametrize("student", ["reference", "stubs", "autograde"])
def test_the_gpt_cells_write_train_and_draw_and_autograde_skips_the_training(student, root, tmp_path):
    """Stage 10's cells that put the model to work, run in order as a notebook runs them (display stood
    in for; 40 training steps, not 600): the reference writes, learns (the loss falls) and draws its
    heads; the stubs get a sentence from each cell; under nbgrader's autograde the model still writes
    (a second), but the half minute of training and the heads of a model never trained are left out,
    as only the grade cells count there."""
    import subprocess
    import sys

    cells = {c["id"]: "".join(c["source"]) for c in stage_notebook(STAGES[10], "", None)["cells"]}
    train = cells["gpt-train"].replace("steps=600", "steps=40")
    assert train != cells["gpt-train"] and AUTOGRADING in train  # the self-check's test of autograde, word for word
    code = ("def display(found): print('drew', type(found).__name__)\n"
            + "\n".join([cells["gpt-writes"], train, cells["gpt-heads"]]))
    package = root / ("assignments" if student == "stubs" else "solutions") / "attention_lab"
    shutil.copytree(root / "assignments" / "tests", tmp_path / "tests")
    shutil.copytree(package, tmp_path / "attention_lab")
    env = {k: v for k, v in os.environ.items() if k != "NBGRADER_EXECUTION"}
    if student == "autograde":
        env["NBGRADER_EXECUTION"] = "autograde"
    said = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, env=env, capture_output=True, text=True,
                          timeout=300)
    assert said.returncode == 0 and not said.stderr, said.stderr
    out = said.stdout
    if student == "stubs":  # a sentence from each cell, and no traceback (stderr is checked above)
        assert out.count("Not written yet") == 2 and "No model was trained" in out and "drew" not in out, out
        return
    assert "with a KV cache:" in out and "Not written yet" not in out, out  # the model writes either way
    if student == "autograde":
        assert NOT_RUN.format(what="your model learn") in out and "No model was trained" in out, out
        assert "step 40/40" not in out and "drew" not in out, out
    else:
        losses = [float(x) for x in re.findall(r"loss (\d+\.\d+)", out)]
        assert "step 40/40" in out and losses[-1] < losses[0], out
        assert out.count("drew") == 3 and "Not run" not in out, out  # the loss, then the heads twice


RUN_CELLS = """
import json, subprocess, sys
real, runs = subprocess.run, []
subprocess.run = lambda *args, **kwargs: runs.append(args) or real(*args, **kwargs)  # counts the pytest runs
cells, fixed = json.load(sys.stdin), sys.argv[1]
said = []
for code in cells:
    try:
        exec(code, {})
        said.append(None)
    except AssertionError as exc:
        said.append(str(exc))
    if code is cells[-2]:  # the student fixes the module, runs its cell, then the last check again
        open("attention_lab/simple.py", "w").write(open(fixed).read())
print(json.dumps({"said": said, "runs": len(runs)}))
"""


@pytest.mark.parametrize("execution", ["validate", "autograde"])
def test_the_public_check_cells_assert_what_each_check_says_running_them_once_and_never_in_autograde(
        execution, root, tmp_path):
    """Stage 1's public-check cells, run in order in one Python as a kernel runs them, beside tests/ and an
    attention_lab/ whose normalize_by_sum divides by the largest score (a zoo entry): under nbgrader's Validate
    (NBGRADER_EXECUTION=validate, as for a student) that cell fails with the check's own sentence, wrapped for
    Validate's lines, the others pass, and one pytest run serves them all until the code changes; under
    autograde nothing runs and every cell passes, as only the grade cells count there."""
    import subprocess
    import sys

    from autograder.public.selfchecks import RAISED, WIDTH
    from tools.zoo import assemble, read_entry

    cells = [source_text(c) for c in stage_notebook(STAGES[1], "", None)["cells"]
             if runs_public_checks(c["metadata"]["nbgrader"]["grade_id"])]
    entry = root / "tests" / "zoo" / "wrong" / "normalize_by_max.py"
    assemble(entry, read_entry(entry), tmp_path)
    shutil.copytree(root / "assignments" / "tests", tmp_path / "tests")
    env = {**os.environ, "NBGRADER_EXECUTION": execution}
    ran = subprocess.run([sys.executable, "-c", RUN_CELLS, str(root / "solutions" / "attention_lab" / "simple.py")],
                         input=json.dumps(cells), cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
    assert ran.returncode == 0, ran.stderr
    out = json.loads(ran.stdout.splitlines()[-1])
    if execution == "autograde":
        assert out == {"said": [None] * len(cells), "runs": 0}, out
        assert ran.stdout.count(NOT_RUN.format(what="what this check says")) == len(cells), ran.stdout
        return
    failed = {k: said for k, said in enumerate(out["said"]) if said is not None}
    (k, said), = failed.items()
    assert "normalize by sum" in cells[k].splitlines()[0], cells[k]
    assert said.startswith("normalize_by_sum(attn_scores_2) is [0.6384, 1.0000"), said
    lines = said.splitlines()
    assert len(lines) > 1 and len(lines[0]) <= WIDTH - RAISED and all(len(line) <= WIDTH for line in lines), said
    assert out["runs"] == 2, out  # once for the cells, once more for the last cell after the fix


GIVEN_COURSE = {"stages": [1, 2, 3, 4, 9], "given": [8]}


def test_a_given_stage_has_no_notebook_and_ships_the_kits_code_which_autograde_puts_back(tmp_path):
    from autograder.grading.config import given_code

    config = from_data(GIVEN_COURSE)
    files = planned_course(config=config)
    assert sorted(rel for rel in files if rel.endswith(".ipynb")) == \
        [f"{SOURCE}/{notebook_name(STAGES[n])}.ipynb" for n in (1, 2, 3, 4, 9)]
    assert files[f"{SOURCE}/attention_lab/modern.py"].decode() == given_code(config)["modern"]
    assert files[f"{SOURCE}/attention_lab/frontier.py"] == \
        planned_files()[next(p for p in planned_files() if p.name == "frontier.py")]  # a taught stage: the stub
    assert not found_solutions_in(files)
    (tmp_path / "nbgrader_config.py").write_bytes(files["nbgrader_config.py"])
    loaded = PyFileConfigLoader("nbgrader_config.py", path=str(tmp_path)).load_config()
    kept = set(loaded.Autograde.exclude_overwriting[DEFAULT_ASSIGNMENT])
    assert "attention_lab/modern.py" not in kept and "attention_lab/frontier.py" in kept


def found_solutions_in(files):
    from autograder.common.markers import BEGIN, HIDDEN_BEGIN

    return [rel for rel, content in files.items() if "/attention_lab/" in rel
            and (BEGIN.encode() in content or HIDDEN_BEGIN.encode() in content)]


def test_the_notebook_of_a_stage_built_on_a_given_one_opens_by_saying_so():
    files = planned_course(config=from_data(GIVEN_COURSE))
    intro = source_text(notebook(files, STAGES[9])["cells"][0])
    opening = intro.split("\n\n")[1]
    assert opening.startswith("**Stage 8 is given in this course.**") and "`attention_lab/modern.py`" in opening
    assert "Stage 8 built" in intro.split("\n\n", 2)[2]  # the stage's own text follows
    assert "given" not in source_text(notebook(files, STAGES[4])["cells"][0])
    assert "given" not in source_text(notebook(planned_course(), STAGES[9])["cells"][0])


def test_a_stages_cells_are_found_by_its_number_in_order_and_a_cell_file_opens_with_its_markdown(tmp_path,
                                                                                                monkeypatch):
    from autograder.authoring import course

    assert [name for name, _, _ in course.stage_cells(STAGES[10])] == ["writes", "train", "heads"]
    # every cell file is of a stage of the curriculum (a stage added with its own cells included), none astray
    numbers = {int(path.name.split("_")[0].removeprefix("stage")) for path in course.CELLS.glob("stage*_*.py")}
    assert numbers <= set(STAGES) and {n for n in STAGES if course.stage_cells(STAGES[n])} == numbers
    (tmp_path / "stage3_2_second.py").write_text('"""## Second"""\nprint(2)\n')
    (tmp_path / "stage3_10_last.py").write_text('"""## Last\n\nIn words.\n"""\nprint(10)\n')
    (tmp_path / "stage3_1_first.py").write_text('"""## First\n"""\n\nimport os\nprint(os.sep)\n')
    monkeypatch.setattr(course, "CELLS", tmp_path)
    assert course.stage_cells(STAGES[3]) == [("first", "## First\n", "import os\nprint(os.sep)"),
                                             ("second", "## Second", "print(2)"),
                                             ("last", "## Last\n\nIn words.\n", "print(10)")]
    (tmp_path / "stage3_4_bare.py").write_text("print('no Markdown')\n")
    with pytest.raises(BuildError, match="opens with its Markdown"):
        course.stage_cells(STAGES[3])
    (tmp_path / "stage3_4_bare.py").unlink()
    (tmp_path / "stage3_unordered.py").write_text('"""## No order"""\n')
    with pytest.raises(BuildError, match="named stage<N>_<order>_<name>.py"):
        course.stage_cells(STAGES[3])
