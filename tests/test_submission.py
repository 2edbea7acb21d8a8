"""Submissions as notebooks: ``attention-lab grade`` reads the module cells without running them."""
import json
import shutil

import pytest

from autograder.cli import main
from autograder.errors import SubmissionError
from autograder.grading.grade import grade
from autograder.grading.registry import max_points
from autograder.grading.results import stage_totals
from autograder.intake.submission import open_submission
from autograder.intake.notebooks import module_cell, module_of, modules_in


def write_notebook(path, *sources):
    cells = [{"cell_type": "code", "metadata": {}, "outputs": [], "execution_count": None, "source": s}
             for s in sources]
    path.write_text(json.dumps({"cells": cells, "metadata": {}, "nbformat": 4, "nbformat_minor": 5}))
    return path


def points(results):
    return {stage: t.points for stage, t in stage_totals(results).items()}


def test_module_cells_are_recognised_only_in_their_exact_form():
    assert module_of(module_cell("simple", "x = 1\n")) == ("simple", "x = 1\n")
    assert module_of("%%writefile  attention_lab/causal.py  \ny\n") == ("causal", "y\n")
    for source in ("%%writefile -a attention_lab/simple.py\nx", "%%writefile other/simple.py\nx",
                   "%%writefile attention_lab/../../etc/simple.py\nx", "%%writefile attention_lab/unknown.py\nx",
                   "# %%writefile attention_lab/simple.py\nx", "x = 1"):
        assert module_of(source) is None, source


def test_a_lone_notebook_grades_the_stages_it_holds(tmp_path, root, grading_server):
    code = (root / "solutions" / "attention_lab" / "simple.py").read_text()
    nb = write_notebook(tmp_path / "mine.ipynb", "print('hi')", module_cell("simple", code).splitlines(keepends=True))
    graded = grade(nb, server=grading_server)
    assert points(graded.results) == {1: max_points(1)}
    assert graded.origins == {"simple": "mine.ipynb"}


def test_notebook_code_wins_over_the_module_file_as_it_does_when_nbgrader_runs_it(tmp_path, root, grading_server):
    folder = tmp_path / "submitted"
    shutil.copytree(root / "solutions" / "attention_lab", folder / "attention_lab")
    stub = (root / "assignments" / "attention_lab" / "simple.py").read_text()
    write_notebook(folder / "stage1_simple.ipynb", module_cell("simple", stub))
    graded = grade(folder, stages={1, 2}, server=grading_server)
    assert points(graded.results) == {1: 0, 2: max_points(2)}
    assert graded.origins["simple"] == "stage1_simple.ipynb"
    assert graded.origins["self_attention"] == "attention_lab/self_attention.py"


def test_a_folder_whose_notebooks_hold_no_module_cell_is_graded_from_its_modules(tmp_path, root, grading_server):
    folder = tmp_path / "submitted"
    shutil.copytree(root / "solutions" / "attention_lab", folder / "attention_lab")
    write_notebook(folder / "scratch.ipynb", "1 + 1")
    (folder / "broken.ipynb").write_text("{not json")
    assert points(grade(folder, stages={1}, server=grading_server).results) == {1: max_points(1)}


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
    assert "neither a folder, a zip nor a notebook" in capsys.readouterr().err


def test_modules_in_keeps_the_last_cell_for_a_module(tmp_path):
    nb = write_notebook(tmp_path / "n.ipynb", module_cell("simple", "a = 1\n"), module_cell("simple", "a = 2\n"))
    assert modules_in(nb) == {"simple": "a = 2\n"}


# ---------------------------------------------------------------- other shapes a submission arrives in

def zip_folder(folder, archive, prefix=""):
    import zipfile

    with zipfile.ZipFile(archive, "w") as z:
        for path in sorted(folder.rglob("*")):
            if path.is_file():
                z.write(path, prefix + str(path.relative_to(folder)))
    return archive


def test_a_zip_with_a_top_folder_is_graded_like_the_folder(tmp_path, root, grading_server):
    folder = tmp_path / "work"
    shutil.copytree(root / "solutions" / "attention_lab", folder / "attention_lab")
    archive = zip_folder(folder, tmp_path / "alice.zip", prefix="alice-final/")
    graded = grade(archive, stages={1}, server=grading_server)
    assert points(graded.results) == {1: max_points(1)}
    assert not list(tmp_path.glob("attention-lab-zip-*"))


def test_module_files_uploaded_on_their_own_are_the_package(tmp_path, root, grading_server):
    folder = tmp_path / "submission"
    folder.mkdir()
    shutil.copy(root / "solutions" / "attention_lab" / "simple.py", folder / "simple.py")
    assert points(grade(folder, stages={1, 2}, server=grading_server).results) == {1: max_points(1), 2: 0}


def test_lone_folders_are_descended_as_in_nbgrader_submitted_student_assignment(tmp_path, root, grading_server):
    folder = tmp_path / "alice" / "attention"
    shutil.copytree(root / "solutions" / "attention_lab", folder / "attention_lab")
    (tmp_path / "alice" / ".DS_Store").write_text("")
    assert points(grade(tmp_path / "alice", stages={1}, server=grading_server).results) == {1: max_points(1)}


def test_a_zip_that_reaches_outside_or_is_not_a_zip_is_refused_by_name(tmp_path):
    import zipfile

    with zipfile.ZipFile(tmp_path / "slip.zip", "w") as z:
        z.writestr("attention_lab/simple.py", "x = 1\n")
        z.writestr("../../evil.py", "x = 1\n")
    (tmp_path / "broken.zip").write_bytes(b"PK not really")
    for name, message in (("slip.zip", "a path outside the archive"), ("broken.zip", "cannot be unpacked")):
        with pytest.raises(SubmissionError, match=message):
            grade(tmp_path / name)
    assert not (tmp_path.parent / "evil.py").exists()


def test_links_inside_a_zip_are_left_out(tmp_path, root, grading_server):
    import stat
    import zipfile

    archive = tmp_path / "link.zip"
    with zipfile.ZipFile(archive, "w") as z:
        z.write(root / "solutions" / "attention_lab" / "simple.py", "attention_lab/simple.py")
        link = zipfile.ZipInfo("attention_lab/causal.py")
        link.external_attr = (stat.S_IFLNK | 0o777) << 16
        z.writestr(link, str(root / "solutions" / "attention_lab" / "causal.py"))
    graded = grade(archive, stages={1, 3}, server=grading_server)
    assert points(graded.results) == {1: max_points(1), 3: 0}


# ---------------------------------------------------------------- what intake reads, and what it will not


def test_intake_reads_only_regular_files_and_names_what_it_left_out(tmp_path, root, grading_server):
    """A FIFO, a device and links named like modules are left out without being read (a FIFO would
    block, /dev/zero would never end, a link reads whatever it names, as root); every check of that
    stage says why, and the rest is graded."""
    import os

    folder = tmp_path / "sub"
    shutil.copytree(root / "solutions" / "attention_lab", folder / "attention_lab")
    package = folder / "attention_lab"
    (package / "causal.py").unlink()
    os.mkfifo(package / "causal.py")
    (package / "buffers.py").unlink()
    (package / "buffers.py").symlink_to("/dev/zero")
    (package / "multihead.py").unlink()
    (package / "multihead.py").symlink_to(root / "solutions" / "attention_lab" / "multihead.py")
    (package / "data").symlink_to(root / "autograder" / "grading" / "golden")
    graded = grade(folder, stages={1, 3, 4, 5}, server=grading_server)
    assert points(graded.results) == {1: max_points(1), 3: 0, 4: 0, 5: 0}
    causal = next(r for r in graded.results if r.id.startswith("s3."))
    said = "stage 3 (causal.py) was not handed in: attention_lab/causal.py is a FIFO, which is left out"
    assert said in causal.feedback
    real = "hand in the real file or folder instead"
    assert sorted(n for n in graded.notes if n.startswith("attention_lab/")) == sorted(
        f"attention_lab/{name} is {what}, which is left out: {advice}"
        for name, what, advice in (("buffers.py", "a symbolic link", real), ("causal.py", "a FIFO", "it is not graded"),
                                   ("data", "a symbolic link", real), ("multihead.py", "a symbolic link", real)))


def test_a_package_that_is_a_link_is_refused_in_one_sentence(tmp_path, root, capsys):
    folder = tmp_path / "sub"
    folder.mkdir()
    (folder / "attention_lab").symlink_to(root / "solutions" / "attention_lab")
    with pytest.raises(SubmissionError) as refused:
        grade(folder)
    assert refused.value.student.startswith("your attention_lab/ is a symbolic link, which is not graded")
    assert main(["grade", str(folder)]) == 2
    assert "symbolic link" in capsys.readouterr().err


def test_a_notebook_that_never_ends_or_blocks_is_refused(tmp_path):
    """stage1_simple.ipynb -> /dev/zero, or a FIFO: refused at once, as the student's file, never read."""
    import os
    import time

    for make in (lambda p: p.symlink_to("/dev/zero"), os.mkfifo):
        folder = tmp_path / f"case{make.__name__}"
        folder.mkdir()
        make(folder / "stage1_simple.ipynb")
        started = time.monotonic()
        for given in (folder, folder / "stage1_simple.ipynb"):
            with pytest.raises(SubmissionError):
                grade(given)
        assert time.monotonic() - started < 5


def test_a_class_folder_is_refused_with_the_command_for_a_class(tmp_path, root):
    """`grade` on an instructor's folder of students (plain, or nbgrader's submitted/<student>/<assignment>/)
    says it is a class and names grade-all, rather than that no attention_lab/ was handed in."""
    for layout in ("plain", "nbgrader"):
        klass = tmp_path / layout / "submitted"
        for student in ("ann", "bob"):
            inner = klass / student / ("attention" if layout == "nbgrader" else "")
            shutil.copytree(root / "assignments" / "attention_lab", inner / "attention_lab")
        with pytest.raises(SubmissionError) as refused:
            open_submission(klass)
        assert "holds 2 folders" in str(refused.value) and f"attention-lab grade-all {klass}" in str(refused.value)
    lone = tmp_path / "lone" / "submitted" / "ann"  # one student: that folder is graded, as before
    shutil.copytree(root / "assignments" / "attention_lab", lone / "attention_lab")
    assert open_submission(lone.parent).package == lone / "attention_lab"
