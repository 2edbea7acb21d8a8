"""The one rule that ties a notebook to a module, both ways.

In the course's notebooks, the code a student writes for a stage lives in one cell that starts
with ``%%writefile attention_lab/<module>.py``: running the cell saves it as that module, so the
notebook, the module on disk and the hidden checks all see the same code. The course builder
writes such cells; ``attention-lab grade`` reads them back out of a submitted notebook, without
running anything, to grade them in the isolated runner.
"""
from __future__ import annotations

import json
import re
import sys
import warnings
from pathlib import Path
from types import ModuleType
from typing import Any

from ..curriculum import STAGES
from ..common.regular_files import NotRegular, read_regular

MODULES = tuple(s.module for s in STAGES.values())
NOTEBOOK_MAX_BYTES = 20 * 2**20
_MAGIC = re.compile(r"%%writefile\s+attention_lab/(\w+)\.py")


class NotebookError(Exception):
    """The file is not a notebook we can read: a message for the user."""


def module_cell(module: str, code: str) -> str:
    """The source of the cell that saves ``code`` as ``attention_lab/<module>.py``."""
    return f"%%writefile attention_lab/{module}.py\n{code}"


def module_of(cell_source: str) -> tuple[str, str] | None:
    """``(module, code)`` when the cell saves one of the lab's modules, else None.

    Only the exact form written by ``module_cell`` counts (no ``-a``, no other folder), and the
    code is what IPython's ``%%writefile`` would write: everything after the first line."""
    first, _, code = cell_source.partition("\n")
    match = _MAGIC.fullmatch(first.strip())
    if match and match.group(1) in MODULES:
        return match.group(1), code
    return None


def read(path: Path) -> dict[str, Any]:
    """A notebook's JSON, refusing what is not one with a sentence that names the file and the rule
    broken: not a regular file (a link, a FIFO, a device) or larger than the limit (``files``), not
    UTF-8, not JSON or nested past what the parser allows, or not valid against nbformat's own schema
    (cells whose source is not text, ...). Nothing is read past the limit, and nothing recurses in
    the kit's own code."""
    try:
        text = read_regular(path, NOTEBOOK_MAX_BYTES).decode("utf-8")
    except NotRegular as exc:
        raise NotebookError(f"{path.name} is {exc}, not a notebook that can be read") from None
    except UnicodeDecodeError:
        raise NotebookError(f"{path.name} is not a readable notebook: it is not UTF-8 text") from None
    try:
        notebook = json.loads(text)
    except json.JSONDecodeError as exc:
        raise NotebookError(f"{path.name} is not a readable notebook: {exc}") from None
    except RecursionError:  # the parser's own nesting limit (about 1000 levels; a notebook has 6)
        raise NotebookError(f"{path.name} is not a notebook: its JSON nests deeper than any notebook does") from None
    if not isinstance(notebook, dict) or not isinstance(notebook.get("cells"), list):
        raise NotebookError(f"{path.name} is not a notebook (no list of cells)")
    _validate(path, notebook)
    return notebook


def _validate(path: Path, notebook: dict[str, Any]) -> None:
    """nbformat's own validator, after its own repair of what Jupyter fixes silently (missing cell ids)."""
    nbformat = _nbformat()
    from nbformat.validator import normalize

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # MissingIDFieldWarning and the like: repaired, not the student's fault
        try:
            nbformat.validate(normalize(notebook)[1])
        except nbformat.ValidationError as exc:
            where = "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in exc.absolute_path).lstrip(".")
            raise NotebookError(f"{path.name} is not a valid notebook: {where + ': ' if where else ''}"
                                f"{exc.message[:200]}") from None
        except RecursionError:
            raise NotebookError(f"{path.name} is not a notebook: it nests deeper than any notebook does") from None


def _nbformat() -> ModuleType:
    """nbformat, imported without the IRI grammar that jsonschema loads for its format checks where the
    package is installed (``rfc3987_syntax``: 0.7 s of nbformat's 0.8 s, a grading of notebooks took 3.5 s).
    No notebook's schema checks a format; once nbformat is in, the package may be imported as usual."""
    if "nbformat" in sys.modules or "jsonschema" in sys.modules or "rfc3987_syntax" in sys.modules:
        import nbformat
        return nbformat
    sys.modules["rfc3987_syntax"] = None  # type: ignore[assignment]  # an import of it raises ImportError, which jsonschema expects
    try:
        import nbformat
    finally:
        if sys.modules.get("rfc3987_syntax", 0) is None:
            del sys.modules["rfc3987_syntax"]
    return nbformat


def source_text(cell: dict[str, Any]) -> str:
    """nbformat stores a cell's source as one string or as a list of lines."""
    source = cell.get("source", "")
    return "".join(source) if isinstance(source, list) else str(source)


def modules_in(path: Path) -> dict[str, str]:
    """``{module: code}`` for every module cell of the notebook at ``path``; when a notebook
    saves one module twice, the later cell wins, as it would when the notebook is run."""
    found: dict[str, str] = {}
    for cell in read(path)["cells"]:
        if isinstance(cell, dict) and cell.get("cell_type") == "code":
            saved = module_of(source_text(cell))
            if saved:
                try:
                    saved[1].encode("utf-8")
                except UnicodeEncodeError:  # JSON may escape a lone surrogate, which no file can hold
                    raise NotebookError(f"{path.name}: the cell that saves attention_lab/{saved[0]}.py holds "
                                        "text that is not valid Unicode (a lone surrogate)") from None
                found[saved[0]] = saved[1]
    return found


def fill(notebook: dict[str, Any], modules: dict[str, str]) -> dict[str, Any]:
    """``notebook`` with the code of ``modules`` typed into their module cells, as a student
    does (for tests and benchmarks that play students)."""
    for cell in notebook["cells"]:
        saved = module_of(source_text(cell)) if cell.get("cell_type") == "code" else None
        if saved and saved[0] in modules:
            cell["source"] = module_cell(saved[0], modules[saved[0]])
    return notebook
