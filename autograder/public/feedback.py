"""Feedback in the student's terms: which row, which entry, by how much.

Shared by the hidden judges and the public self-checks (the build copies this file into
``assignments/tests/`` so that a student's folder needs nothing but torch and pytest).
Only torch and the standard library may be imported here.
"""
from __future__ import annotations

import builtins
import linecache
import sys
import textwrap
import warnings
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import torch


def _fmt(values: torch.Tensor) -> str:
    return "[" + ", ".join(f"{v:.4f}" for v in values.flatten().tolist()[:8]) + (
        ", ...]" if values.numel() > 8 else "]")


def _index(idx: Iterable[int]) -> str:
    return "[" + ", ".join(str(i) for i in idx) + "]"


def wrapped(text: str, width: int, taken: int = 0) -> str:
    """``text`` with each of its lines wrapped at words to ``width`` columns, the first line to
    ``width - taken`` (``taken``: what stands before it on its line, such as ``AssertionError: ``). For the
    places that show feedback as it is (nbgrader's and Gradescope's pages, nbgrader's Validate), which do not
    wrap a long line but cut it off or run it past the page. A word longer than a line (a path) stays whole."""
    lines = []
    for i, line in enumerate(text.split("\n")):
        pad = " " * taken if i == 0 else ""
        parts = textwrap.wrap(line, width, initial_indent=pad, break_on_hyphens=False, break_long_words=False)
        lines.append("\n".join(parts)[len(pad):] if parts else line)
    return "\n".join(lines)


def describe_mismatch(actual: object, expected: torch.Tensor, name: str, atol: float = 1e-4, rtol: float = 1e-4,
                      reveal: bool = True) -> str | None:
    """None when ``actual`` matches ``expected``; otherwise one sentence a student can act on.

    ``reveal=False`` says where and by how much the values are off without printing the
    expected numbers (for hidden golden data).
    """
    if not isinstance(actual, torch.Tensor):
        return f"{name} should be a torch.Tensor, got {type(actual).__name__}"
    if tuple(actual.shape) != tuple(expected.shape):
        return f"{name} has shape {tuple(actual.shape)} but should have shape {tuple(expected.shape)}"
    actual = actual.detach().cpu().double()
    expected = expected.detach().cpu().double()
    if not torch.isfinite(actual).all():
        at = (~torch.isfinite(actual)).nonzero()[0].tolist()
        return f"entry {_index(at)} of {name} is {actual[tuple(at)].item()} (not a finite number)"
    diff = (actual - expected).abs()
    bad = diff > atol + rtol * expected.abs()
    if not bad.any():
        return None
    first = bad.nonzero()[0].tolist()
    # "entry [...] of" rather than name[...]: names are often phrases ("the trained model's logits for ...")
    where = f"entry {_index(first)} of {name}"
    if reveal:
        row = tuple(first[:-1])
        got = actual[row] if actual.dim() > 1 else actual
        want = expected[row] if expected.dim() > 1 else expected
        label = f"row {_index(first[:-1])} of {name}" if actual.dim() > 1 else name
        return f"{label} is {_fmt(got)}, expected {_fmt(want)} (first difference at index {_index(first)})"
    # How far off, as a band of the expected values' scale, never the difference itself: with the
    # student's own value, the difference would give the hidden expected value away.
    scale = float(expected.abs().max()) or 1.0
    size = diff[tuple(first)].item() / scale
    band = next((f"by less than {b:.1%}".replace(".0%", "%") + " of" for b in (0.001, 0.01, 0.1) if size < b),
                "by up to" if size <= 1 else "by more than")
    return (f"{where} is off {band} the largest expected value; {int(bad.sum())} of {bad.numel()} "
            f"entries differ from the reference")


def describe_row_sums(weights: torch.Tensor, name: str = "your attention weights", atol: float = 1e-4) -> str | None:
    """None when every row sums to 1, else which row does not and what it sums to."""
    if weights.dim() == 0 or weights.numel() == 0:
        return f"{name} has shape {tuple(weights.shape)}: no row of weights to sum"
    sums = weights.detach().cpu().double().sum(dim=-1)
    bad = (sums - 1).abs() > atol
    if not bad.any():
        return None
    if sums.dim() == 0:
        return f"{name} sums to {sums.item():.4f}, but attention weights sum to 1"
    idx = bad.nonzero()[0].tolist()
    row = f"row {idx[-1]}" + (f" of batch {_index(idx[:-1])}" if len(idx) > 1 else "")
    return f"{row} of {name} sums to {sums[tuple(idx)].item():.4f}, but every row of attention weights sums to 1"


def describe_future(weights: torch.Tensor, name: str = "your attention weights") -> str | None:
    """None when nothing above the diagonal is nonzero, else the first future position that is."""
    weights = weights.detach().cpu()
    if weights.dim() < 2:
        return f"{name} has shape {tuple(weights.shape)}; attention weights are a matrix, one row per token"
    if not torch.isfinite(weights).all():
        idx = (~torch.isfinite(weights)).nonzero()[0].tolist()
        return (f"{name}{_index(idx)} is {weights[tuple(idx)].item()}: a row whose scores are all masked "
                "gives nan (does the mask hide the diagonal too?)")
    n = weights.shape[-1]
    future = torch.triu(torch.ones(weights.shape[-2], n, dtype=torch.bool), diagonal=1)
    leak = (weights != 0) & future
    if not leak.any():
        return None
    idx = leak.nonzero()[0].tolist()
    return (f"{name}{_index(idx)} is {weights[tuple(idx)].item():.4f}: token {idx[-2]} attends to token "
            f"{idx[-1]}, which comes after it; everything above the diagonal must be 0")


# --- exceptions raised by the student's code -------------------------------------------------

Record = dict[str, Any]  # an error record: RECORD_FIELDS, and what a record may say besides
RECORD_FIELDS = {"type": str, "message": str, "where": str, "code": str, "function": str, "not_implemented": bool,
                 "importing": str}


def is_error_record(obs: object) -> bool:
    """``{"error": record}`` as ``Lab.attempt`` (or the runner) writes it for a call that raised: that one key,
    and a record with every field ``problem`` gives one, of its type (a record may say more, such as why a
    file was left out). The one test of it: a student's own dict with an ``"error"`` key (a parameter named
    ``error``, in a report of parameters by name) is the student's data, not an error."""
    if type(obs) is not dict or set(obs) != {"error"} or type(obs["error"]) is not dict:
        return False
    record = obs["error"]
    return all(type(record.get(k)) is t for k, t in RECORD_FIELDS.items())


def problem(kind: str, message: str, **located: object) -> Record:
    """An error record as plain data (it crosses from the grader's child process as is)."""
    record: Record = {"type": kind, "message": message, "where": "", "code": "", "function": "",
              "not_implemented": False, "importing": ""}
    record.update(located)
    return record


def _inside(filename: str, package: Path | None) -> bool:
    path = Path(filename)
    return package is not None and path.is_absolute() and path.resolve().is_relative_to(package)


def _shown(filename: str, package: Path | None) -> str:
    """``attention_lab/causal.py`` rather than a full path."""
    path = Path(filename).resolve()
    if package is not None and _inside(filename, package):
        return f"attention_lab/{path.relative_to(package).as_posix()}"
    return path.name


def error_record(exc: BaseException, package: str | Path | None = None, importing: str = "") -> Record:
    """``exc`` as plain data, located at its innermost frame inside ``package`` (the student's
    ``attention_lab/`` folder): file, line, function and the line of code."""
    try:
        return _error_record(exc, package, importing)
    except Exception:  # an exception whose __str__ (or traceback) is itself broken or hostile
        return problem("Exception", "an exception that could not be described", importing=importing)


def _kind(exc: BaseException) -> str:
    """The exception's class name; ``pytest.Skipped`` etc. for pytest's outcomes (pytest.skip,
    xfail, exit, fail raised by the student's code), which pytest files under ``builtins``."""
    name = type(exc).__name__
    outcomes = vars(sys.modules["_pytest.outcomes"]).values() if "_pytest.outcomes" in sys.modules else ()
    pytest_types = tuple(v for v in outcomes if isinstance(v, type) and issubclass(v, BaseException)
                         and v is not getattr(builtins, v.__name__, None))
    return f"pytest.{name}" if isinstance(exc, pytest_types) else name


def _error_record(exc: BaseException, folder: str | Path | None, importing: str) -> Record:
    package = Path(folder).resolve() if folder is not None else None
    located: dict[str, object] = {"not_implemented": isinstance(exc, NotImplementedError), "importing": importing}
    if isinstance(exc, SyntaxError) and exc.filename:
        located.update(where=f"{_shown(exc.filename, package)} line {exc.lineno}", code=(exc.text or "").strip())
        return problem(_kind(exc), str(exc.msg), **located)
    tb = exc.__traceback__
    while tb is not None:
        code = tb.tb_frame.f_code
        if _inside(code.co_filename, package):
            located.update(where=f"{_shown(code.co_filename, package)} line {tb.tb_lineno}",
                           code=linecache.getline(code.co_filename, tb.tb_lineno).strip()[:200],
                           function=getattr(code, "co_qualname", code.co_name))
        tb = tb.tb_next
    return problem(_kind(exc), str(exc)[:600], **located)


def describe_warning(said: warnings.WarningMessage, folder: str | Path) -> str:
    """A warning the student's code gave, in one line located as an error is (``attention_lab/causal.py
    line 100``), not as Python prints it: the whole path of the grading's folder, then the line of code."""
    where = f"{_shown(said.filename, Path(folder).resolve())} line {said.lineno}"
    return f"{said.category.__name__} at {where}: {_message(str(said.message))}"


def _message(text: str) -> str:
    lines = (text.strip() or "(no message)").splitlines()
    return "\n    ".join(lines[:6]) + ("\n    ..." if len(lines) > 6 else "")


# Problems the kit itself reports (timeouts, crashes, refusals, tampering): their message says it all.
KIT_PROBLEMS = ("ProbeError", "Timeout", "Crash", "NotRun", "BadResult", "Tampered", "Refused",
                "LibraryAttention", "NotHandedIn")


def describe_error(rec: Record, what: str = "") -> str:
    """One sentence about an error record; ``what`` names the call when no frame of the student's is known."""
    text = _located(rec, what)
    if not rec["importing"] or rec["type"] in KIT_PROBLEMS:
        return text
    if rec["type"] == "SystemExit":
        return f"the submission exited during import of {rec['importing']}: {text}"
    return f"could not import {rec['importing']}: {text}"


def _located(rec: Record, what: str) -> str:
    function = "" if rec["function"].startswith("<") else rec["function"]  # "<module>": while importing
    if rec["not_implemented"]:
        name = function or what
        where = f" ({rec['where']})" if rec["where"] else ""
        return f"not implemented yet: {name}{where}" if name else f"not implemented yet{where}"
    if rec["type"] in KIT_PROBLEMS:
        return str(rec["message"])
    at = f" at {rec['where']}" if rec["where"] else ""
    if rec["type"] == "SystemExit":
        return (f"{function + ' ' if function else ''}called sys.exit({rec['message']}){at}; "
                "exiting cannot end a check early, it fails it")
    if rec["type"].startswith("pytest."):
        return (f"{function + ' ' if function else ''}raised {rec['type']}{at}; a check cannot be "
                "skipped, marked as expected to fail or stopped from inside the code it checks")
    if not rec["where"]:
        return f"{what + ' raised ' if what else ''}{rec['type']}: {_message(rec['message'])}"
    code = f" in `{rec['code']}`" if rec["code"] else ""
    who = f"{function} raised " if function else ""
    return f"{who}{rec['type']} at {rec['where']}{code}: {_message(rec['message'])}"
