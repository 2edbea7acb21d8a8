"""Shared fixtures of the kit's own tests."""
import shutil
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
