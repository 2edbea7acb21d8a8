"""Setup of the public self-checks: which ``attention_lab`` is checked, and the stage markers.

Run them from the folder that holds ``attention_lab/`` and ``tests/``::

    pytest                 # every stage
    pytest -m stage3       # only stage 3

By default the checks import the ``attention_lab/`` next to this ``tests/`` folder (your
copy). Set ``ATTENTION_LAB_SUBMISSION`` to another folder that holds ``attention_lab/`` to
check that one instead.
"""
import importlib.util
import os
import sys
from pathlib import Path

import pytest

TESTS_DIR = Path(__file__).resolve().parent
DEFAULT_FOLDER = TESTS_DIR.parent
ENV_VAR = "ATTENTION_LAB_SUBMISSION"


def submission_folder():
    """The folder holding ``attention_lab/``: ``$ATTENTION_LAB_SUBMISSION`` or the parent of tests/."""
    value = os.environ.get(ENV_VAR, "").strip()
    if not value:
        if not (DEFAULT_FOLDER / "attention_lab" / "__init__.py").is_file():
            raise pytest.UsageError(f"no attention_lab/__init__.py next to tests/ in {DEFAULT_FOLDER}; "
                                    f"keep attention_lab/ and tests/ side by side, or set {ENV_VAR}")
        return DEFAULT_FOLDER
    folder = Path(value).expanduser().resolve()
    if folder.name == "attention_lab" and (folder / "__init__.py").is_file():
        folder = folder.parent  # the package itself was named: take the folder that holds it
    if not (folder / "attention_lab" / "__init__.py").is_file():
        raise pytest.UsageError(f"{ENV_VAR}={value}: no attention_lab/__init__.py in {folder}; "
                                "name a folder that holds attention_lab/")
    return folder


def _put_first(path):
    path = str(path)
    while path in sys.path:
        sys.path.remove(path)
    sys.path.insert(0, path)


def _use_submission(folder):
    """Make ``import attention_lab`` find ``folder/attention_lab`` and nothing else."""
    _put_first(TESTS_DIR)  # `import feedback`, `import lab_checks`
    _put_first(folder)     # before the tests folder and before anything pytest or the cwd added
    package = (folder / "attention_lab").resolve()
    for name in [n for n in sys.modules if n == "attention_lab" or n.startswith("attention_lab.")]:
        loaded = getattr(sys.modules[name], "__file__", None) or ""
        if not Path(loaded).resolve().is_relative_to(package):
            del sys.modules[name]  # imported from elsewhere earlier: forget it
    importlib.invalidate_caches()
    spec = importlib.util.find_spec("attention_lab")  # finds the package without running its code
    found = Path(spec.origin).resolve().parent if spec and spec.origin else None
    if found != package:
        raise pytest.UsageError(f"`import attention_lab` would load {found or 'nothing'}, "
                                f"not {package}; is another attention_lab installed?")
    return package


_PACKAGE = pytest.StashKey()


def pytest_configure(config):
    _put_first(TESTS_DIR)  # curriculum.py, feedback.py, lab_checks.py ... sit beside this file
    from curriculum import STAGES  # the kit's stage list, copied here by the build

    for number, stage in STAGES.items():
        config.addinivalue_line("markers", f"stage{number}: stage {number}, {stage.title} ({stage.module}.py)")
    config.stash[_PACKAGE] = _use_submission(submission_folder())


def pytest_report_header(config):
    package = config.stash.get(_PACKAGE, None)
    if package is None:
        return None
    hint = f"set by {ENV_VAR}" if os.environ.get(ENV_VAR, "").strip() else f"set {ENV_VAR} to check another folder"
    return f"checking attention_lab in {package} ({hint})"
