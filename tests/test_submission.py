"""Submissions as notebooks: ``attention-lab grade`` reads the module cells without running them."""
import json
import shutil

import pytest

from autograder.cli import main
from autograder.grade import SubmissionError, grade
from autograder.notebooks import module_cell, module_of, modules_in
from autograder.registry import max_points
from autograder.report import stage_totals


def write_notebook(path, *sources):
    cells = [{"cell_type": "code", "metadata": {}, "outputs": [], "execution_count": None, "source": s}
             for s in sources]
    path.write_text(json.dumps({"cells": cells, "metadata": {}, "nbformat": 4, "nbformat_minor": 5}))
    return path


def points(results):
    return {stage: p for stage, (p, *_) in stage_totals(results).items()}


def test_module_cells_are_recognised_only_in_their_exact_form():
    assert module_of(module_cell("simple", "x = 1\n")) == ("simple", "x = 1\n")
    assert module_of("%%writefile  attention_lab/causal.py  \ny\n") == ("causal", "y\n")
    for source in ("%%writefile -a attention_lab/simple.py\nx", "%%writefile other/simple.py\nx",
                   "%%writefile attention_lab/../../etc/simple.py\nx", "%%writefile attention_lab/unknown.py\nx",
                   "# %%writefile attention_lab/simple.py\nx", "x = 1"):
        assert module_of(source) is None, source


def test_a_lone_notebook_grades_the_stages_it_holds(tmp_path, root):
    code = (root / "solutions" / "attention_lab" / "simple.py").read_text()
    nb = write_notebook(tmp_path / "mine.ipynb", "print('hi')", module_cell("simple", code).splitlines(keepends=True))
    graded = grade(nb)
    assert points(graded.results) == {1: max_points(1)}
    assert graded.origins == {"simple": "mine.ipynb"}


def test_notebook_code_wins_over_the_module_file_as_it_does_when_nbgrader_runs_it(tmp_path, root):
    folder = tmp_path / "submitted"
    shutil.copytree(root / "solutions" / "attention_lab", folder / "attention_lab")
    stub = (root / "assignments" / "attention_lab" / "simple.py").read_text()
    write_notebook(folder / "stage1_simple.ipynb", module_cell("simple", stub))
    graded = grade(folder, stages={1, 2})
    assert points(graded.results) == {1: 0, 2: max_points(2)}
    assert graded.origins["simple"] == "stage1_simple.ipynb"
    assert graded.origins["self_attention"] == "attention_lab/self_attention.py"


def test_a_folder_whose_notebooks_hold_no_module_cell_is_graded_from_its_modules(tmp_path, root):
    folder = tmp_path / "submitted"
    shutil.copytree(root / "solutions" / "attention_lab", folder / "attention_lab")
    write_notebook(folder / "scratch.ipynb", "1 + 1")
    (folder / "broken.ipynb").write_text("{not json")
    assert points(grade(folder, stages={1}).results) == {1: max_points(1)}


@pytest.mark.parametrize("content, message", [
    ("{not json", "not a readable notebook"),
    ('{"cells": 3}', "not a notebook"),
    (None, "no cell that saves a module"),
])
def test_unusable_notebooks_are_refused_with_a_reason(tmp_path, content, message):
    path = tmp_path / "bad.ipynb"
    if content is None:
        write_notebook(path, "print(1)")
    else:
        path.write_text(content)
    with pytest.raises(SubmissionError, match=message):
        grade(path)


def test_cli_reports_where_the_code_came_from(tmp_path, root, capsys):
    code = (root / "solutions" / "attention_lab" / "simple.py").read_text()
    nb = write_notebook(tmp_path / "stage1_simple.ipynb", module_cell("simple", code))
    assert main(["grade", str(nb)]) == 0
    captured = capsys.readouterr()
    assert "simple.py from stage1_simple.ipynb" in captured.err
    assert f"Total {max_points(1)}/{max_points(1)}" in captured.out
    assert main(["grade", str(tmp_path / "notes.txt")]) == 2
    (tmp_path / "notes.txt").write_text("hi")
    assert main(["grade", str(tmp_path / "notes.txt")]) == 2
    assert "neither a folder nor a notebook" in capsys.readouterr().err


def test_modules_in_keeps_the_last_cell_for_a_module(tmp_path):
    nb = write_notebook(tmp_path / "n.ipynb", module_cell("simple", "a = 1\n"), module_cell("simple", "a = 2\n"))
    assert modules_in(nb) == {"simple": "a = 2\n"}
