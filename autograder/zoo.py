"""The zoo's entries (``tests/zoo/``, described in ``tests/test_zoo.py``): read without running
them, and assembled into submissions, for the tests and for the class benchmark."""
from __future__ import annotations

import ast
import shutil
from pathlib import Path

from .build import KIT_ROOT
from .submission import STAGE_OF

SOLUTIONS = KIT_ROOT / "solutions" / "attention_lab"
ZOO = KIT_ROOT / "tests" / "zoo"


def read_entry(path: Path) -> dict:
    """The fragment's docstring and constants, read without running it (it needs its module)."""
    tree = ast.parse(path.read_text(), filename=str(path))
    entry = dict(ENTRY_DEFAULTS, doc=ast.get_docstring(tree))
    for node in tree.body:
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            name = node.targets[0].id
            if name in ENTRY_DEFAULTS:
                entry[name] = ast.literal_eval(node.value)
    return entry


ENTRY_DEFAULTS = {"MODULE": None, "LOSES": [], "MENTIONS": None, "ONLY": False, "STAGES": None, "TIMEOUT": 3,
                  "BOUND": 60, "FILES": {}, "NEEDS_ROOT": None, "LIMITS": {}}


def stages_for(module: str) -> set[int]:
    return {STAGE_OF[module]} | ({4} if module == "causal" else set())


WRONG = sorted((ZOO / "wrong").glob("*.py"))
CORRECT = sorted((ZOO / "correct").glob("*.py"))
HOSTILE = sorted((ZOO / "hostile").glob("*.py"))


def assemble(path: Path, entry: dict, folder: Path) -> Path:
    """A submission: the reference, with the entry appended to its module, plus its extra files."""
    package = folder / "attention_lab"
    shutil.copytree(SOLUTIONS, package, ignore=shutil.ignore_patterns("__pycache__"))
    target = package / f"{entry['MODULE']}.py"
    target.write_text(target.read_text() + f"\n\n# ---- zoo entry {path.stem} ----\n" + path.read_text())
    for name, text in entry["FILES"].items():
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        (folder / name).write_text(text)
    return folder
