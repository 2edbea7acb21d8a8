"""The commands README.md and docs/instructors/ give run as written: every `attention-lab` line of their
shell blocks, its placeholders (SUBMISSION, N, ~/course) given values, is run here, but for the two whose
own tests run them end to end (`build`, which rewrites the checkout: tests/test_build.py; `nbgrader import`,
minutes of grading: tests/test_nbgrader.py), which must at least be commands the kit has. README's test
command is what .ci/run runs, and its instructor commands start from the checkout's environment, which
README's first command makes and never activates."""
from __future__ import annotations

import importlib.util
import re
import shutil
import sys
from contextlib import contextmanager
from pathlib import Path

import pytest

from autograder.cli import main
from autograder.sandbox import bytecode

ROOT = Path(__file__).resolve().parent.parent
# new-stage.md's commands grade the stage its guide adds: tests/test_new_stage.py writes that stage and runs them.
DOCS = [ROOT / "README.md", *sorted(p for p in (ROOT / "docs" / "instructors").glob("*.md")
                                    if p.name != "new-stage.md")]
KIT_COMMAND = re.compile(r"^(?:\.venv/bin/)?attention-lab (?P<args>[^#]+?)\s*(?:#.*)?$")
NOT_RUN_HERE = {("build",): "it rewrites the checkout's generated files: tests/test_build.py runs it on a copy",
                ("nbgrader", "import"): "it grades a whole course: tests/test_nbgrader.py runs it end to end"}


def blocks(path: Path) -> list[str]:
    """The lines of ``path``'s fenced shell blocks (```bash), joined where a line ends in a backslash."""
    lines, inside = [], False
    for line in path.read_text().splitlines():
        if line.startswith("```"):
            inside = line.strip() in ("```bash", "```sh")
            continue
        if inside:
            if lines and lines[-1].endswith("\\"):
                lines[-1] = lines[-1][:-1] + line.strip()
            else:
                lines.append(line.strip())
    return lines


def kit_commands() -> list[tuple[str, str]]:
    """(document, command line) for every line that runs `attention-lab`."""
    return [(str(path.relative_to(ROOT)), line) for path in DOCS for line in blocks(path) if KIT_COMMAND.match(line)]


def argv(line: str, places: dict[str, str]) -> list[str]:
    """The command line's arguments, an optional part ``[--opt VALUE]`` kept, its placeholders given values."""
    args = KIT_COMMAND.match(line).group("args").replace("[", " ").replace("]", " ").split()
    return [places.get(a, a) for a in args]


def test_every_document_gives_kit_commands():
    found = {doc for doc, _ in kit_commands()}
    assert {"README.md", "docs/instructors/grade.md", "docs/instructors/grade-all.md", "docs/instructors/nbgrader.md",
            "docs/instructors/gradescope.md", "docs/instructors/classroom.md"} <= found, found


def test_readme_runs_the_kit_from_the_environment_its_first_command_makes_and_ci_runs_its_test_command():
    first, test = blocks(ROOT / "README.md")[:2]
    assert first.startswith("python3 -m venv .venv && .venv/bin/pip install") and "source " not in first
    readme = [line for doc, line in kit_commands() if doc == "README.md"]
    assert readme and all(line.startswith(".venv/bin/attention-lab ") for line in readme), readme
    assert (Path(sys.executable).parent / "attention-lab").exists(), "the environment has no attention-lab command"
    ci = (ROOT / ".ci" / "run").read_text()
    assert test in ci.splitlines(), ".ci/run does not run README's test command as written"
    assert "'.[test]'" in test and "pytest" in test and "'.[test]'" not in first


@pytest.fixture(scope="module")
def places(tmp_path_factory):
    """Values for the documents' placeholders: a submission, a class of two in nbgrader's layout and plain,
    a course folder, files to write."""
    tmp = tmp_path_factory.mktemp("commands")
    for student, folder in (("ann", "solutions"), ("bob", "assignments")):
        shutil.copytree(ROOT / folder / "attention_lab", tmp / "submitted" / student / "attention_lab")
    (tmp / "config.toml").write_text("stages = [1, 2]\n")
    return {"SUBMISSION": str(ROOT / "assignments"), "F": str(tmp / "out.file"), "N": "1", "S": "30",
            "DIR": str(tmp / "records"), "FILE": str(tmp / "config.toml"), "results.json": str(tmp / "results.json"),
            "report.html": str(tmp / "report.html"), "submitted/": str(tmp / "submitted"),
            "submitted": str(tmp / "submitted"),
            "SUBMISSIONS_DIR": str(tmp / "submitted"), "grades.csv": str(tmp / "grades.csv"),
            "~/course": str(tmp / "course"), "COURSE_DIR": str(tmp / "course"), ".": str(tmp / "course"),
            "autograder.zip": str(tmp / "autograder.zip"), "for-moss/": str(tmp / "for-moss"),
            "attention-template/": str(tmp / "template"), "partly": str(ROOT / "assignments")}


@pytest.mark.parametrize("doc, line", kit_commands(), ids=[f"{d}: {c[:60]}" for d, c in kit_commands()])
def test_each_command_runs_as_written(doc, line, places, monkeypatch, capsys):
    args = argv(line, places)
    skipped = next((why for words, why in NOT_RUN_HERE.items() if tuple(args[:len(words)]) == words), None)
    if skipped:  # a command the kit has, all the same
        with pytest.raises(SystemExit) as helped:
            main([*args[:len(next(w for w in NOT_RUN_HERE if tuple(args[:len(w)]) == w))], "--help"])
        assert helped.value.code == 0
        return
    monkeypatch.chdir(ROOT)
    monkeypatch.delenv("ATTENTION_LAB_CONFIG", raising=False)
    if args[:2] == ["nbgrader", "init"]:
        shutil.rmtree(places["~/course"], ignore_errors=True)
    if args[:1] == ["grade-all"]:  # a second grade-all on the same records is refused (resumably, as its doc says)
        for written in Path(places["grades.csv"]).parent.glob("grades*"):
            shutil.rmtree(written) if written.is_dir() else written.unlink()
    with scheduler_for(args) as args:
        code = main(args)
    out, err = capsys.readouterr()
    assert code == 0, f"{doc}: `{line}` exited {code}:\n{err[-2000:]}"


@contextmanager
def scheduler_for(args):
    """``args`` with a Dask scheduler's placeholder (``--executor dask://HOST:PORT``) the address of a
    LocalCluster of two workers, started for the command and stopped after it."""
    if not any(a.startswith("dask://") for a in args):
        yield args
        return
    from tools.local_cluster import local_cluster

    with local_cluster(2) as (_, here):
        yield [here if a.startswith("dask://") else a for a in args]


def test_readme_compiles_the_bytecode_of_what_the_fork_server_imports():
    """README's first command installs with no bytecode compiled (pip's compile is half its time) and then
    compiles what the fork server imports, as another user who cannot write it: torch's files and sympy's
    among them, each with its bytecode cached once the command has run."""
    first = blocks(ROOT / "README.md")[0]
    assert "--no-compile" in first and " -m autograder.sandbox.bytecode && " in first, first
    files = bytecode.imported_files()
    packages = {f.split("site-packages/")[1].split("/")[0] for f in files if "site-packages/" in f}
    assert {"torch", "sympy", "numpy"} <= packages, packages
    assert not [f for f in files if "/attention_lab/" in f or "/zoo/" in f], files  # the kit's own, never a student's
    assert bytecode.main() == 0
    missing = [f for f in files if not Path(importlib.util.cache_from_source(f)).exists()]
    assert not missing, missing
