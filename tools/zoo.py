"""The zoo's entries (``tests/zoo/``, described in ``tests/test_zoo.py``): read without running
them, and assembled into submissions, for the tests and for the class benchmark; the degenerate
zoo, made by code from the contract's callables; and the reference as a student hands it in, into
a release's notebooks and modules (``hand_in``)."""
from __future__ import annotations

import ast
import json
import os
import shutil
import sysconfig
import tempfile
from pathlib import Path

from autograder.common.markers import solved
from autograder.curriculum import STAGE_OF, STAGES
from autograder.intake import notebooks
from autograder.paths import KIT_ROOT

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
                  "BOUND": 60, "FILES": {}, "NEEDS_KERNEL": None, "LIMITS": {}, "DIFFERS": {}, "LINKS": {},
                  "PLANT": {}, "LEAVES": [], "REFUSED": None, "FLAGGED": None, "HELPERS": []}


def helper(name: str) -> str:
    """The code of ``tests/zoo/helpers/<name>.py``: what several entries do alike (attacks reach past the audit
    hook or answer for the child; public model code is adapted to the contract's names), added to a
    submission before the code that uses it."""
    return (ZOO / "helpers" / f"{name}.py").read_text()


# Submissions as students make them, for the tests and the benchmarks.

def reference_code(root: Path = KIT_ROOT) -> dict[str, str]:
    """module -> the reference as a student who solved the stage hands it in."""
    return {s.module: solved((root / "solutions" / "attention_lab" / f"{s.module}.py").read_text())
            for s in STAGES.values()}


def hand_in(release: Path, folder: Path, modules: dict[str, str]) -> Path:
    """A submission as a student makes one, for tests and benchmarks: a copy of the release with
    ``modules`` typed into their module cells and saved in attention_lab/ (what running them does)."""
    shutil.copytree(release, folder)
    for path in folder.glob("*.ipynb"):
        path.write_text(json.dumps(notebooks.fill(json.loads(path.read_text()), modules), indent=1))
    for module, code in modules.items():
        (folder / "attention_lab" / f"{module}.py").write_text(code)
    return folder


WRONG = sorted((ZOO / "wrong").glob("*.py"))
CORRECT = sorted((ZOO / "correct").glob("*.py"))
HOSTILE = sorted((ZOO / "hostile").glob("*.py"))
SEEDS = sorted((ZOO / "seeds").glob("*.py"))


def summary(results) -> str:
    """Each check's verdict and the first line of its feedback: what a failing zoo test shows."""
    return "\n".join(f"  {'PASS' if r.passed else 'FAIL'} {r.id}: {r.feedback.splitlines()[0]}" for r in results)


def places(folder: Path) -> dict:
    """The words an entry may use for places outside its submission (``folder``), and where they are:
    the kit's checkout, a folder beside the submission (where a classmate's work, the course's source
    or the gradebook would be), the submission's parent, the grader's home, /tmp, and the
    site-packages of the Python that grades."""
    return {"@KIT@": str(KIT_ROOT), "@BESIDE@": str(folder.parent / "beside"), "@PARENT@": str(folder.parent),
            "@HOME@": os.path.expanduser("~"), "@TMP@": tempfile.gettempdir(),
            "@SITE@": sysconfig.get_paths()["purelib"]}


def placed(text: str, where: dict) -> str:
    for word, path in where.items():
        text = text.replace(word, path)
    return text


def assemble(path: Path, entry: dict, folder: Path) -> Path:
    """A submission: the reference, with the entry appended to its module, plus its extra files and
    its links (``LINKS``: name in the submission -> target, which replaces what is there)."""
    where = places(folder)
    package = folder / "attention_lab"
    shutil.copytree(SOLUTIONS, package, ignore=shutil.ignore_patterns("__pycache__"))
    target = package / f"{entry['MODULE']}.py"
    helpers = "".join(f"\n\n# ---- zoo helper {name} ----\n" + helper(name) for name in entry["HELPERS"])
    target.write_text(target.read_text() + helpers + f"\n\n# ---- zoo entry {path.stem} ----\n"
                      + placed(path.read_text(), where))
    for name, text in entry["FILES"].items():
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        (folder / name).write_text(text)
    for name, to in entry["LINKS"].items():
        link = folder / name
        if link.is_dir():
            shutil.rmtree(link)
        link.unlink(missing_ok=True)
        link.symlink_to(placed(to, where))
    return folder


def plant(entry: dict, folder: Path) -> list[Path]:
    """Write the entry's ``PLANT`` files (``path: text`` or ``path: [text, mode]``) outside the
    submission ``folder``; returns them, for the caller to remove."""
    planted = []
    for name, content in entry["PLANT"].items():
        text, mode = (content, 0o644) if isinstance(content, str) else content
        spot = Path(placed(name, places(folder)))
        spot.parent.mkdir(parents=True, exist_ok=True)
        spot.write_text(text)
        spot.chmod(mode)
        planted.append(spot)
    return planted


# ---------------------------------------------------------------- the degenerate zoo, made by code

DEGENERATIONS = ("zeros", "nan", "none", "list", "float64", "half")

# Appended once to a module of the reference: ``_degenerate(value, kind)`` turns what a callable
# returned into what a half-finished or confused submission returns instead.
DEGENERATE = '''
import torch as _dz_torch


def _degenerate(value, kind):
    if kind == "none":
        return None
    if kind == "list":
        return _dz_listed(value)
    if isinstance(value, _dz_torch.Tensor):
        if kind == "zeros":
            return _dz_torch.zeros_like(value)
        if kind == "nan":
            dtype = value.dtype if value.is_floating_point() else _dz_torch.float32
            return _dz_torch.full(value.shape, float("nan"), dtype=dtype, device=value.device)
        if kind == "float64":
            return value.double()
        return value.reshape(-1)[: value.numel() // 2]  # half of its elements: the wrong shape
    if isinstance(value, tuple) and hasattr(value, "_fields"):  # a NamedTuple takes its fields one by one
        return type(value)(*(_degenerate(v, kind) for v in value))
    if isinstance(value, (tuple, list)):
        return type(value)(_degenerate(v, kind) for v in value)
    if isinstance(value, _dz_torch.nn.Module):
        with _dz_torch.no_grad():
            for p in value.parameters():
                if kind == "zeros":
                    p.zero_()
                elif kind == "nan":
                    p.fill_(float("nan"))
                elif kind == "half":
                    p.data = p.data.reshape(-1)[: p.numel() // 2]
        return value.double() if kind == "float64" else value
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return {"zeros": 0, "nan": float("nan"), "float64": float(value), "half": value // 2}[kind]
    return value


def _dz_listed(value):
    if isinstance(value, _dz_torch.Tensor):
        return value.tolist()
    if isinstance(value, (tuple, list)):
        return [_dz_listed(v) for v in value]
    return [value]
'''


def graded_callables(solutions: Path = SOLUTIONS, modules=None) -> list[tuple[str, str, str]]:
    """(module, name, "function" or "class") of every public function and layer of the contract, in
    the reference's order: what a student writes, so what can come back wrong.

    A "class" is a layer: an ``nn.Module``, whose forward is what degenerates. A class of another kind (a
    ``NamedTuple`` state, a dataclass of settings) has no forward: it is left out here, and degenerates
    through the functions and layers that return it (``_degenerate`` takes it apart field by field).
    Whether a class is a layer is read from its bases: ``nn.Module`` (any ``...Module``) or a layer
    found before it, in its module or an earlier one."""
    found, layers = [], set()
    for module in modules or STAGE_OF:
        tree = ast.parse((solutions / f"{module}.py").read_text())
        for node in tree.body:
            if isinstance(node, ast.ClassDef) and any(
                    (base.attr if isinstance(base, ast.Attribute) else getattr(base, "id", "")).endswith("Module")
                    or getattr(base, "id", None) in layers for base in node.bases):
                layers.add(node.name)
            elif not isinstance(node, ast.FunctionDef):
                continue
            if not node.name.startswith("_"):
                found.append((module, node.name, "class" if isinstance(node, ast.ClassDef) else "function"))
    return found


def degenerate_fragment(name: str, kind: str, how: str) -> str:
    """Code that makes ``name`` (a function, or a class's forward) return ``how`` instead."""
    if kind == "function":
        wrap = (f"_dz_original = {name}\n\n\ndef {name}(*args, **kwargs):\n"
                f"    return _degenerate(_dz_original(*args, **kwargs), {how!r})\n")
    else:
        wrap = (f"_dz_forward = {name}.forward\n\n\ndef _dz_wrapped(self, *args, **kwargs):\n"
                f"    return _degenerate(_dz_forward(self, *args, **kwargs), {how!r})\n\n\n"
                f"{name}.forward = _dz_wrapped\n")
    return f"{DEGENERATE}\n\n{wrap}"


def assemble_degenerate(module: str, name: str, kind: str, how: str, folder: Path) -> Path:
    """A submission: the reference, with ``name`` of ``module`` returning ``how`` (see DEGENERATIONS)."""
    package = folder / "attention_lab"
    shutil.copytree(SOLUTIONS, package, ignore=shutil.ignore_patterns("__pycache__"))
    target = package / f"{module}.py"
    target.write_text(target.read_text() + f"\n\n# ---- degenerate: {name} returns {how} ----\n"
                      + degenerate_fragment(name, kind, how))
    return folder
