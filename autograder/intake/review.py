"""Source flags: where a submission's code reaches for the interpreter's internals, named to the
instructor beside its grade.

Grading refuses such reaches as it meets them (the audit hook, the guard against library attention,
the kernel's layers), but the layers inside the process can be got round by code that reaches the
interpreter's internals: PEP 578 says so of audit hooks, and torch's modes can be taken off their
stack. So the source is read as well, and a submission that reaches for them is named to the
instructor, never silently graded. A flag is a reason to look, not a verdict: nothing is scored on
it, and code that hides what it names (a name built from strings) is not found by it.

The code is parsed with ``ast``, never run; this module imports the standard library only.
"""
from __future__ import annotations

import ast
import threading
from collections.abc import Iterator

# What is flagged -> why, in the instructor's words; one row per form, with why grading cares.
# A dotted name is found however the code names it: ``sys._getframe``, ``from sys import _getframe``,
# ``import torch as t; t.ops``, ``getattr(sys, "_getframe")``; a module also where it is imported.
# A name that starts with a dot is any attribute of that name.
FLAGS = {
    "sys._getframe": "reads the interpreter's frames",  # the caller's frame is the probe's
    "sys._current_frames": "reads every thread's frames",  # the same, for all threads at once
    "inspect": "inspects frames and live objects",  # currentframe(), stack(): the probe's frames
    "traceback": "walks the interpreter's stack",  # walk_stack() hands out frames
    "gc": "scans the interpreter's objects",  # get_objects() finds whatever the probes hold
    "torch.ops": "calls torch's operators below the functions grading watches",  # library attention by another name
    "torch._C": "calls torch's C++ bindings directly",  # DisableTorchFunction, the mode stacks, raw kernels
    "torch.overrides": "works torch's function modes, one of which is grading's check of library attention",
    "torch.utils._python_dispatch": "works torch's dispatch modes, one of which is grading's check of library "
                                    "attention",
    "ctypes": "calls native code",  # memory and libc, under every guard written in Python
    "cffi": "calls native code",
    "threading": "runs code in threads of its own",  # torch's modes, so the check of library attention, are per thread
    "_thread": "runs code in threads of its own",
    ".f_back": "walks to the caller's frame",  # from its own frame up into the probe's
    ".f_locals": "reads a frame's local variables",
    ".f_globals": "reads a frame's globals",
    ".tb_frame": "reaches a frame through a traceback",  # an exception's traceback leads into the probe
    ".gi_frame": "reaches a generator's frame",
    ".__code__": "reads or swaps a function's code",
    ".__globals__": "reads a function's globals",  # a probe's function leads to its module
    "sys.addaudithook": "installs an audit hook",  # sees, and may raise in, every event of the grader's
    "sys.settrace": "traces the interpreter",  # sees every line the probes run
    "sys.setprofile": "profiles the interpreter",
    "sys.modules": "reaches the modules loaded in the process, grading's probes among them",
    "builtins": "reaches the interpreter's builtins",  # what the grader's code calls too
    "__builtins__": "reaches the interpreter's builtins",
    "importlib": "loads modules by hand",  # reload, util, machinery; import_module is judged by its argument
    "__import__()": "imports a module whose name is made at run time",  # a literal name is an import
    "exec()": "runs code made at run time, which this review cannot read",
    "eval()": "runs code made at run time, which this review cannot read",
    "compile()": "runs code made at run time, which this review cannot read",
}
ATTRIBUTES = {name[1:] for name in FLAGS if name.startswith(".")}
NAMES = [name for name in FLAGS if not name.startswith(".") and not name.endswith("()")]
IMPORTERS = ("__import__", "builtins.__import__", "importlib.import_module")
# Python 3.11's parser keeps its recursion count per interpreter, not per thread: two threads parsing
# at once (grade-all's workers) fail with "AST constructor recursion depth mismatch". One at a time.
_PARSING = threading.Lock()


def review(sources: dict[str, str]) -> list[str]:
    """Findings in ``sources`` (file name -> its text), in file and line order: ``"causal.py line 12:
    sys._getframe (reads the interpreter's frames)"``. A file that does not parse gives none."""
    found: set[tuple[str, int, str]] = set()
    for file, text in sources.items():
        try:
            with _PARSING:
                tree = ast.parse(text)
        except (SyntaxError, ValueError, RecursionError, MemoryError):  # not Python: grading says so, not this
            continue
        found |= {(file, line, what) for line, what in _findings(tree)}
    return [f"{file} line {line}: {what.strip('.()')} ({FLAGS[what]})" for file, line, what in sorted(found)]


def _findings(tree: ast.AST) -> Iterator[tuple[int, str]]:
    """(line, the row of FLAGS) for each reach in ``tree``. ``ast.walk`` is iterative, so code nested
    deeper than Python recurses cannot crash it."""
    aliases = _aliases(tree)
    for node in ast.walk(tree):
        line = getattr(node, "lineno", 0)
        if isinstance(node, ast.Import):
            yield from ((line, flag) for a in node.names if (flag := _flag(a.name)))
        elif isinstance(node, ast.ImportFrom) and not node.level and node.module:  # not the package's own modules
            yield from ((line, flag) for a in node.names if (flag := _flag(f"{node.module}.{a.name}")))
        elif isinstance(node, ast.Attribute):
            if node.attr in ATTRIBUTES:
                yield line, f".{node.attr}"
            if flag := _flag(_dotted(node, aliases)):
                yield line, flag
        elif isinstance(node, ast.Name):
            if node.id == "__builtins__":
                yield line, "__builtins__"
            elif node.id in aliases and (flag := _flag(aliases[node.id])):  # from sys import _getframe; _getframe()
                yield line, flag
        elif isinstance(node, ast.Call):
            yield from ((line, flag) for flag in _call(node, aliases))


def _call(node: ast.Call, aliases: dict[str, str]) -> Iterator[str]:
    called = _dotted(node.func, aliases)
    first = node.args[0] if node.args else None
    literal = first.value if isinstance(first, ast.Constant) and isinstance(first.value, str) else None
    if called in IMPORTERS and node.args:
        if literal is None:
            yield "__import__()"
        elif flag := _flag(literal):  # __import__("gc") is gc
            yield flag
    elif called in ("exec", "eval", "compile"):
        yield f"{called}()"
    elif called == "getattr" and len(node.args) >= 2 and isinstance(node.args[1], ast.Constant):
        attr = node.args[1].value  # getattr(frame, "f_back"), getattr(sys, "_getframe")
        if attr in ATTRIBUTES:
            yield f".{attr}"
        owner = _dotted(node.args[0], aliases)
        if owner and isinstance(attr, str) and (flag := _flag(f"{owner}.{attr}")):
            yield flag


def _aliases(tree: ast.AST) -> dict[str, str]:
    """Local name -> what it was imported as: ``import torch as t`` gives t -> torch, ``from torch
    import _C`` gives _C -> torch._C. Wherever the import is (in a function too)."""
    found: dict[str, str] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for a in node.names:
                if a.asname:
                    found[a.asname] = a.name
        elif isinstance(node, ast.ImportFrom) and not node.level and node.module:
            for a in node.names:
                found[a.asname or a.name] = f"{node.module}.{a.name}"
    return found


def _dotted(node: ast.expr, aliases: dict[str, str]) -> str | None:
    """``a.b.c`` as a string, its first name read through ``aliases``; None for anything else."""
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if not isinstance(node, ast.Name):
        return None
    return ".".join([aliases.get(node.id, node.id), *reversed(parts)])


def _flag(name: str | None) -> str | None:
    """The row of FLAGS that the dotted ``name`` falls under, if any."""
    if not name or name in ("importlib", "importlib.import_module"):  # judged where it is called (_call)
        return None
    return next((flag for flag in NAMES if name == flag or name.startswith(flag + ".")), None)
