"""Shared fixtures of the kit's own tests."""
import importlib
import shutil
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="session")
def root():
    return ROOT


@pytest.fixture
def make_submission(tmp_path):
    """A copy of the reference in a fresh folder; ``edit(module, text)`` appends or replaces code."""

    def make(**modules):
        pkg = tmp_path / "sub" / "attention_lab"
        shutil.copytree(ROOT / "solutions" / "attention_lab", pkg)
        for name, text in modules.items():
            (pkg / f"{name}.py").write_text(text)
        return pkg.parent

    return make


@pytest.fixture(scope="session")
def ref():
    """The reference modules of every stage, imported in this process: {module name: module}."""
    from autograder.registry import STAGES

    sys.path.insert(0, str(ROOT / "solutions"))
    try:
        for name in [m for m in sys.modules if m == "attention_lab" or m.startswith("attention_lab.")]:
            del sys.modules[name]
        pkg = importlib.import_module("attention_lab")
        assert Path(pkg.__file__).parent == ROOT / "solutions" / "attention_lab"
        return {s.module: importlib.import_module(f"attention_lab.{s.module}") for s in STAGES.values()}
    finally:
        sys.path.remove(str(ROOT / "solutions"))


@pytest.fixture(scope="session")
def reference_observations():
    """What every probe the registry uses returns for the reference, on cpu and meta: {Task: observation}."""
    from autograder.grade import plan
    from autograder.registry import all_checks
    from autograder.runner import run_tasks
    from autograder.submission import open_submission

    return run_tasks(open_submission(ROOT / "solutions"), plan(all_checks(), {"cpu", "meta"})).observations
