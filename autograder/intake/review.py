"""Source flags: where a submission's code reaches for the interpreter's internals, runs code where
grading does not look, or reaches a module by a name made at run time, named to the instructor beside
its grade.

Grading refuses such reaches as it meets them (the audit hook, the guard against library attention,
the kernel's layers), but the layers inside the process can be got round by code that reaches the
interpreter's internals: PEP 578 says so of audit hooks, and torch's modes can be taken off their
stack or left behind in another thread. So the source is read as well, and a submission that reaches
for them is named to the instructor, never silently graded. A flag is a reason to look, not a
verdict: nothing is scored on it.

**What is read.** Every ``.py`` file of the package that the child may import, by its path in the
package (``causal.py``, ``_impl.py``, ``sub/helpers.py``): a helper module runs as surely as the
course's. Each is read as bytes, as the child's import reads it, so that a coding declaration
(``# coding: utf-7``) decodes it for the review as it does for the import.

**Names made at run time.** ``__import__`` and ``importlib.import_module`` are judged by their
argument: a string literal is an import like any other, anything else is flagged. ``getattr``,
``setattr``, ``delattr`` and ``hasattr`` whose name is not a string literal are flagged when the
object may be a module: a name bound by an import (``import torch``, ``from torch import nn``,
``from . import _impl``), ``__import__`` or ``import_module`` of anything, ``sys.modules``, ``vars()``,
``globals()`` and ``locals()``; anything reached from one of these by an attribute, a subscript,
``getattr``, a dict's ``get`` or ``values``, or a tuple, list or dict that holds one; and a name, an
attribute name (``self.lib = torch``) or a parameter of a function of the file (called with a module)
that is bound to one anywhere in the file. Scopes are not followed: a name bound to a module once is
one everywhere in its file. ``vars`` of such an object (or of nothing), its ``__dict__``,
``globals()`` and ``locals()`` are flagged whatever is done with them. Why modules and not every
object: whatever grading refuses or guards is reached through a module (torch's functions and
operators, its C++ bindings, the interpreter's ``sys``), so ``getattr(F, "scaled_dot_" +
"product_attention")`` or ``getattr(__import__("torch"), name)`` is how code would reach one without
writing its name; while model code names its own layers and parameters by strings all the time
(``getattr(self, name)``, ``setattr(self, f"head_{i}", ...)``, ``getattr(layer, "bias", None)``),
and the probes are not reached through the student's objects. These builtins, and ``exec``, ``eval``
and ``compile``, are flagged too where they are named but not called (``g = getattr``,
``reduce(getattr, ...)``): what they will be given cannot be read. What the rule does not see: a
module handed from one file to a function of another, or kept by a method call
(``modules.append(torch)``); a flag's absence proves nothing.

**A process of its own.** ``ast.parse`` takes about 1 GiB of memory for each MiB of dense source
(a name a line), holding the GIL: in the grading process, 6 MiB of it got a whole class's grading
killed for memory. So ``review`` parses in a fresh ``python -I -S`` of the same interpreter, given
the files on stdin and writing its findings on stdout as JSON, one line for each file as it is done;
that process bounds itself before it reads a byte (``MEMORY_BYTES`` of address space and ``CPU_S``
seconds of CPU) and is given ``WALL_S`` seconds in all. A file over ``MAX_FILE_BYTES`` is not parsed
at all. A file that is too large, too deeply nested for the parser, or that runs the review out of
memory or time is flagged as such, and the files after it are reviewed by a fresh process: never the
grader's death, never silently clean. A file that does not parse (a ``SyntaxError``) gives no flag:
the child cannot import it either, and grading says so; but for one whose coding declaration names a
codec this review does not know, which a codec registered at run time would decode for the child. One
process for each review also means the grader needs no lock: Python 3.11's parser keeps its recursion
count per interpreter, and two threads of grade-all parsing at once failed with "AST constructor
recursion depth mismatch".

This module imports the standard library only, so that its process needs nothing else.
"""
from __future__ import annotations

import ast
import json
import sys
from collections.abc import Iterator, Mapping

# What is flagged -> why, in the instructor's words; one row per form, with why grading cares.
# A dotted name is found however the code names it: ``sys._getframe``, ``from sys import _getframe``,
# ``import torch as t; t.ops``, ``getattr(sys, "_getframe")``; a module also where it is imported, and
# where its private twin is (``_ctypes`` is ``ctypes``). A name that starts with a dot is any attribute
# of that name; one that ends with ``()`` is judged where it is called, by what it is given.
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
    "torch.utils.cpp_extension": "builds and loads native code",
    "ctypes": "calls native code",  # memory and libc, under every guard written in Python
    # The child loads the kit's probes (and the guards beside them) before the submission: they are there to
    # be run ahead of the grader's requests, patched or taken apart. No code of a student's needs them.
    "autograder": "reaches the grader's own modules, loaded in the process beside it",
    "cffi": "calls native code",
    # Another thread: torch's modes, so the check of library attention, are per thread.
    "threading": "runs code in threads of its own",
    "_thread": "runs code in threads of its own",
    # The same modules reached as another module's attribute (torch.utils.data.dataloader.threading).
    ".threading": "runs code in threads of its own",
    "._thread": "runs code in threads of its own",
    ".Thread": "runs code in a thread of its own",
    "concurrent.futures": "runs code in threads or processes of its own (executors)",
    "asyncio": "runs code in threads of its own (to_thread, run_in_executor)",
    "multiprocessing.dummy": "runs code in threads of its own (a thread pool under multiprocessing's name)",
    "multiprocessing.pool": "runs code in threads or processes of its own (ThreadPool, Pool)",
    "multiprocessing": "runs code in processes of its own, and threads to feed them",
    "logging.handlers": "runs code in a thread of its own (QueueListener)",
    "torch.multiprocessing": "runs code in processes of its own, and threads to feed them",
    "torch.utils.data.DataLoader": "runs code in worker processes, and a thread that pins memory",
    "torch.jit.fork": "runs code on torch's inter-op threads",
    "torch.jit._fork": "runs code on torch's inter-op threads",
    "torch.futures": "runs callbacks on torch's threads",
    "torch.distributed": "runs code on the threads of torch's remote calls and process groups",
    # Code run at a time grading does not choose: between two lines of a probe, or after the probes.
    "signal": "runs code when a signal arrives",
    "atexit": "runs code when the interpreter exits, after the probes",
    "weakref": "runs code when an object is collected (finalize, callbacks)",
    ".__del__": "runs code when an object is collected",  # also where a class defines it
    ".f_back": "walks to the caller's frame",  # from its own frame up into the probe's
    ".f_locals": "reads a frame's local variables",
    ".f_globals": "reads a frame's globals",
    ".tb_frame": "reaches a frame through a traceback",  # an exception's traceback leads into the probe
    ".gi_frame": "reaches a generator's frame",
    ".__code__": "reads or swaps a function's code",
    ".f_code": "reads a frame's code, which can be rebuilt into code this review cannot read",
    ".gi_code": "reads a generator's code, which can be rebuilt into code this review cannot read",
    ".cr_code": "reads a coroutine's code, which can be rebuilt into code this review cannot read",
    ".__globals__": "reads a function's globals",  # a probe's function leads to its module
    "sys.addaudithook": "installs an audit hook",  # sees, and may raise in, every event of the grader's
    "sys.settrace": "traces the interpreter",  # sees every line the probes run
    "sys.setprofile": "profiles the interpreter",
    "sys.monitoring": "watches the interpreter",  # settrace's successor (Python 3.12)
    "sys.modules": "reaches the modules loaded in the process, grading's probes among them",
    "builtins": "reaches the interpreter's builtins",  # what the grader's code calls too
    "__builtins__": "reaches the interpreter's builtins",
    "importlib": "loads modules by hand",  # reload, util, machinery; import_module is judged by its argument
    "pkgutil": "reaches modules and their names by strings (resolve_name)",
    "pydoc": "reaches modules and their names by strings (locate)",
    "runpy": "runs a module found by its name",
    "operator.attrgetter": "reaches attributes by names given as strings",
    "operator.methodcaller": "calls methods by names given as strings",
    ".__getattribute__": "reaches an attribute by a name made at run time",
    # Names made at run time (the rule is the module's docstring's).
    "__import__()": "imports a module whose name is made at run time",  # a literal name is an import
    "getattr()": "reaches a module's attribute by a name made at run time",
    "setattr()": "sets a module's attribute by a name made at run time",  # replaces what the probes call
    "delattr()": "deletes a module's attribute by a name made at run time",
    "hasattr()": "looks up a module's attribute by a name made at run time",
    "vars()": "reads a module's namespace, where a name made at run time reaches anything",
    "module.__dict__": "reads a module's namespace, where a name made at run time reaches anything",
    # The grader's own code runs in the same process (the child's loop reads its requests with os.read):
    # what a module holds, replaced, is replaced for it too.
    "module.attribute =": "replaces what a module holds (os.read = ...), for the grader's code in the process too",
    # The child's descriptors: the grader's FIFOs, on which it asks for tasks and the child answers.
    "/proc/self/fd": "reads the process's own file descriptors, the grader's FIFOs among them",
    "os.read": "reads a file descriptor by its number, the grader's FIFOs among them",
    "os.write": "writes a file descriptor by its number, the grader's FIFOs among them",
    "os.fdopen": "opens a file descriptor by its number, the grader's FIFOs among them",
    "os.dup": "copies a file descriptor by its number, the grader's FIFOs among them",
    "os.dup2": "copies a file descriptor by its number, the grader's FIFOs among them",
    "select": "waits on file descriptors, the grader's FIFOs among them",
    "selectors": "waits on file descriptors, the grader's FIFOs among them",
    "globals()": "reads the module's own namespace, its imports among them, by names made at run time",
    "locals()": "reads the names in scope, imported modules among them, by names made at run time",
    # Code this review cannot read.
    "exec()": "runs code made at run time, which this review cannot read",
    "eval()": "runs code made at run time, which this review cannot read",
    "compile()": "runs code made at run time, which this review cannot read",
    "marshal": "loads code this review cannot read",
    "pickle": "calls whatever function its data names, which this review cannot read",
    "codecs.register": "adds a codec, which may decode another file's source into code this review cannot read",
}
ATTRIBUTES = {name[1:] for name in FLAGS if name.startswith(".")}
NAMES = [name for name in FLAGS if not name.startswith((".", "/")) and not name.endswith(("()", "=")) and
         name != "module.__dict__"]
IMPORTERS = ("__import__", "builtins.__import__", "importlib.import_module")
BY_NAME = ("getattr", "setattr", "delattr", "hasattr")
NAMESPACES = ("vars", "globals", "locals")
# Judged where they are called, by what they are given; named anywhere else, what they will be given
# cannot be read, so they are flagged there.
JUDGED = {**dict.fromkeys(IMPORTERS, "__import__()"),
          **{name: f"{name}()" for name in ("exec", "eval", "compile", *BY_NAME, *NAMESPACES)}}

# The review's bounds. Honest modules are 2-40 KB; the reference's largest is 18 KB, and reviewing all
# of the reference takes a process of 13 MiB. A MiB of real code takes ~75 MiB to parse, a MiB of dense
# code (a name a line) ~930 MiB: a file within MAX_FILE_BYTES either parses within MEMORY_BYTES or is
# flagged for running the review out of memory.
MAX_FILE_BYTES = 512 * 2**10
MEMORY_BYTES = 256 * 2**20  # address space of the review's process
CPU_S = 10  # CPU seconds of each review process (the reference takes 0.03)
WALL_S = 30  # seconds for the whole review, beside the child that grading runs meanwhile
REVIEW_NICE = 10  # what the review's process adds to its nice value: the children grading come first
MAX_FINDINGS = 100  # listed; more are counted ("... more findings, not listed"), never a file's worth each


def review(sources: Mapping[str, str | bytes]) -> list[str]:
    """Findings in ``sources`` (a file's path in the package -> its text or bytes), in file and line
    order: ``"causal.py line 12: sys._getframe (reads the interpreter's frames)"``, or the review's
    word on a whole file: ``"causal.py: too large to review (6.0 MiB; at most 0.5 MiB)"``. A file that
    does not parse gives none. The files are parsed in a process of its own (the module's docstring)."""
    found: list[tuple[str, int, str]] = []  # (file, line, row of FLAGS); line 0: the review's word on the file
    todo: list[tuple[str, bytes]] = []
    for name, text in sorted(sources.items()):
        data = text if isinstance(text, bytes) else text.encode("utf-8", "surrogateescape")
        if len(data) > MAX_FILE_BYTES:
            found.append((name, 0, f"too large to review ({len(data) / 2**20:.1f} MiB; "
                                   f"at most {MAX_FILE_BYTES / 2**20:.1f} MiB)"))
        else:
            todo.append((name, data))
    unlisted = _review_apart(todo, found)
    said = [f"{file}: {what}" if not line else f"{file} line {line}: {what.strip('.()')} ({FLAGS[what]})"
            for file, line, what in sorted(set(found))]
    unlisted += max(len(said) - MAX_FINDINGS, 0)
    return said[:MAX_FINDINGS] + ([f"{unlisted} more findings, not listed"] if unlisted else [])


def _review_apart(todo: list[tuple[str, bytes]], found: list[tuple[str, int, str]]) -> int:
    """Review ``todo`` in processes of their own, adding to ``found``: a process that stops on a file
    (out of memory or time, or killed) has that file flagged, and the files after it go to a fresh one,
    within ``WALL_S`` in all. Returns how many findings the processes left unlisted."""
    import subprocess  # here: the review's own process needs neither
    import time

    unlisted = 0
    deadline = time.monotonic() + WALL_S
    while todo:
        given = json.dumps([len(data) for _, data in todo]).encode() + b"\n" + b"".join(data for _, data in todo)
        try:
            # No preexec_fn (not safe beside grade-all's threads): the process bounds itself (_serve).
            done = subprocess.run([sys.executable, "-I", "-S", __file__], input=given, capture_output=True,
                                  timeout=max(deadline - time.monotonic(), 0.1), check=False)
            out, stopped = done.stdout, _stopped(done.returncode, done.stderr)
        except subprocess.TimeoutExpired as exc:
            out, stopped = exc.stdout or b"", f"the review ran out of time on it (at most {WALL_S} s in all)"
        except OSError as exc:
            found += [(name, 0, f"not reviewed: the review could not start ({exc.strerror or exc})")
                      for name, _ in todo]
            break
        del given
        reported = _reported(out)
        for index, (name, _) in enumerate(todo):
            if index not in reported:
                todo = todo[index:]
                break
            unlisted += _taken(name, reported[index], found)
        else:
            break
        found.append((todo[0][0], 0, stopped or "the review stopped on it"))
        todo = todo[1:]
        if todo and time.monotonic() >= deadline:
            found += [(name, 0, f"not reviewed: the review ran out of time before it (at most {WALL_S} s in all)")
                      for name, _ in todo]
            break
    return unlisted


def _stopped(returncode: int, stderr: bytes) -> str | None:
    """Why the review's process stopped before its last file, in the instructor's words."""
    import signal

    if returncode == 0:
        return None
    if returncode in (-signal.SIGXCPU, -signal.SIGKILL):  # RLIMIT_CPU: its soft limit, then its hard one
        return f"the review ran out of time on it (at most {CPU_S} s of CPU)"
    last = (stderr.decode(errors="replace").strip().splitlines() or [""])[-1][:200]
    try:
        how = f"signal {signal.Signals(-returncode).name}" if returncode < 0 else f"exit status {returncode}"
    except ValueError:
        how = f"signal {-returncode}"
    return f"the review stopped on it ({how}{': ' + last if last else ''})"


def _taken(name: str, result: object, found: list[tuple[str, int, str]]) -> int:
    """Add what the review's process said of file ``name`` to ``found``; how many it left unlisted."""
    if isinstance(result, str):
        found.append((name, 0, result))
        return 0
    if not isinstance(result, list):  # never: _judged says one or the other
        return 0
    listed, more = result
    found += [(name, line, what) for line, what in listed]
    return int(more)


def _reported(out: bytes) -> dict[int, object]:
    """file index -> what the review's process said of it: a line it did not finish is not a word."""
    reported = {}
    for line in out.splitlines():
        try:
            index, result = json.loads(line)
        except (ValueError, TypeError):
            continue
        reported[index] = result
    return reported


def _serve() -> None:
    """The review's own process: its bounds before anything is read, then the files given on stdin
    (a JSON line of their sizes, then their bytes), and a JSON line on stdout for each as it is done,
    so that the grader knows which file stopped it if it is stopped."""
    import os
    import resource

    # It reads beside the grading children, on what CPU they leave: a grading waits for the review only
    # where the review is slower than its children, never the children for the review.
    os.nice(REVIEW_NICE)
    for limit, soft, hard in ((resource.RLIMIT_AS, MEMORY_BYTES, MEMORY_BYTES),
                              (resource.RLIMIT_CPU, CPU_S, CPU_S + 1)):
        _, held = resource.getrlimit(limit)
        if held != resource.RLIM_INFINITY:
            soft, hard = min(soft, held), min(hard, held)
        resource.setrlimit(limit, (soft, hard))
    given = sys.stdin.buffer
    for index, size in enumerate(json.loads(given.readline())):
        print(json.dumps([index, _judged(given.read(size))]), flush=True)


def _judged(data: bytes) -> list[object] | str:
    """``[findings, how many more]`` in one file's source (findings as ``[line, row of FLAGS]``, at
    most MAX_FINDINGS), or the review's word on the whole file."""
    try:
        tree = ast.parse(data)
        found = sorted(set(_findings(tree)))
    except SyntaxError as exc:  # not Python: grading says so, not this; but a codec made at run time would
        if str(exc.msg).startswith("unknown encoding"):  # decode it for the child's import (codecs.register)
            return f"declares an encoding this review does not know ({exc.msg})"
        return [[], 0]
    except ValueError:  # null bytes, on some versions
        return [[], 0]
    except RecursionError:  # CPython can import it under a raised recursion limit
        return "too deeply nested to review"
    except MemoryError:
        return f"the review ran out of memory on it (at most {MEMORY_BYTES >> 20} MiB)"
    except Exception as exc:  # the review's own bug: said, never a file silently clean
        return f"the review failed on it ({type(exc).__name__}: {str(exc)[:200]})"
    return [found[:MAX_FINDINGS], max(len(found) - MAX_FINDINGS, 0)]


def _findings(tree: ast.AST) -> Iterator[tuple[int, str]]:
    """(line, the row of FLAGS) for each reach in ``tree``. ``ast.walk`` is iterative, and so is all
    else here, so code nested as deep as CPython parses cannot crash it; each dotted name is read once,
    whole, so that a long chain of attributes costs its length, not its square."""
    nodes = list(ast.walk(tree))  # breadth first: a node before the nodes inside it; walked once, read thrice
    aliases = _aliases(nodes)
    modules = _Modules(nodes, aliases)
    called: set[int] = set()  # the function of each call: judged with its arguments (_call)
    inner: set[int] = set()  # attributes inside a longer dotted name, read with all of it
    for node in nodes:
        line = getattr(node, "lineno", 0)
        if isinstance(node, ast.Import):
            yield from ((line, flag) for a in node.names if (flag := _flag(a.name)))
        elif isinstance(node, ast.ImportFrom) and not node.level and node.module:  # not the package's own modules
            yield from ((line, flag) for a in node.names if (flag := _flag(f"{node.module}.{a.name}")))
        elif isinstance(node, ast.Attribute):
            if node.attr in ATTRIBUTES:
                yield line, f".{node.attr}"
            if node.attr == "__dict__" and modules.holds(node.value):
                yield line, "module.__dict__"
            if isinstance(node.ctx, (ast.Store, ast.Del)) and modules.holds(node.value):
                yield line, "module.attribute ="
            if isinstance(node.value, ast.Attribute):
                inner.add(id(node.value))
            if id(node) not in inner:
                dotted = modules.dotted(node)
                if flag := _flag(dotted):
                    yield line, flag
                elif dotted in JUDGED and id(node) not in called:  # m = importlib.import_module
                    yield line, JUDGED[dotted]
        elif isinstance(node, ast.Name):
            name = aliases.get(node.id, node.id)
            if node.id == "__builtins__":
                yield line, "__builtins__"
            elif node.id in aliases and (flag := _flag(name)):  # from sys import _getframe; _getframe()
                yield line, flag
            elif name in JUDGED and id(node) not in called and node.id not in modules.bound:  # g = getattr
                yield line, JUDGED[name]
        elif isinstance(node, ast.Call):
            called.add(id(node.func))
            yield from ((line, flag) for flag in _call(node, aliases, modules))
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name == "__del__":
            yield line, ".__del__"
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) and (
                "/proc/self/fd" in node.value or "/proc/thread-self/fd" in node.value or "fdinfo" in node.value):
            yield line, "/proc/self/fd"


def _call(node: ast.Call, aliases: dict[str, str], modules: _Modules) -> Iterator[str]:
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
    elif called in BY_NAME:
        if any(isinstance(a, ast.Starred) for a in node.args[:2]):  # getattr(*args): unreadable
            yield f"{called}()"
        elif len(node.args) >= 2:
            name = node.args[1]
            if isinstance(name, ast.Constant) and isinstance(name.value, str):
                if name.value in ATTRIBUTES:  # getattr(frame, "f_back")
                    yield f".{name.value}"
                owner = modules.dotted(node.args[0])
                if owner and (flag := _flag(f"{owner}.{name.value}")):  # getattr(sys, "_getframe")
                    yield flag
            elif modules.holds(node.args[0]):  # getattr(F, "scaled_dot_" + "product_attention")
                yield f"{called}()"
    elif called in NAMESPACES:
        if called != "vars" or not node.args or modules.holds(node.args[0]):
            yield f"{called}()"


class _Modules:
    """Which expressions of one file may hold a module, or anything reached from one: the rule of the
    module's docstring. Scopes are not followed: a name bound to a module anywhere is one everywhere."""

    THROUGH = ("getattr", "vars", "next", "iter", "list", "tuple", "dict", "set", "reversed", "sorted")
    LOOKUPS = ("get", "pop", "setdefault", "values", "items", "copy", "__getitem__")  # of sys.modules, vars(m)
    READ = {ast.Import, ast.ImportFrom, ast.Assign, ast.AnnAssign, ast.AugAssign, ast.NamedExpr, ast.For, ast.AsyncFor,
            ast.comprehension, ast.withitem, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.arg, ast.Name,
            ast.Call}

    def __init__(self, nodes: list[ast.AST], aliases: dict[str, str]) -> None:
        self.aliases = aliases
        self.imported: set[str] = set()  # names bound by an import
        self.own: set[str] = set()  # those bound by a relative one: the package's own, reviewed as files
        self.names: set[str] = set()  # names that may hold a module
        self.attrs: set[str] = set()  # attribute names a module was stored under: self.lib = torch
        self.bound: set[str] = set()  # names bound otherwise than by an import: eval=False is not eval
        bindings: list[tuple[ast.expr, ast.expr]] = []  # (target, what it is bound to, or its elements)
        functions: dict[str, list[ast.arguments]] = {}
        calls: list[ast.Call] = []
        for node in nodes:
            if type(node) not in self.READ:  # most nodes: a constant, an operator, a name read
                continue
            if isinstance(node, ast.Import):
                self.imported.update(a.asname or a.name.partition(".")[0] for a in node.names)
            elif isinstance(node, ast.ImportFrom):
                names = {a.asname or a.name for a in node.names if a.name != "*"}
                self.imported |= names
                if node.level:
                    self.own |= names
            elif isinstance(node, ast.Assign):
                bindings += [(target, node.value) for target in node.targets]
            elif isinstance(node, (ast.AnnAssign, ast.AugAssign, ast.NamedExpr)) and node.value is not None:
                bindings.append((node.target, node.value))
            elif isinstance(node, (ast.For, ast.AsyncFor, ast.comprehension)):
                bindings.append((node.target, node.iter))
            elif isinstance(node, ast.withitem) and node.optional_vars is not None:
                bindings.append((node.optional_vars, node.context_expr))
            elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                self.bound.add(node.name)
                if not isinstance(node, ast.ClassDef):
                    functions.setdefault(node.name, []).append(node.args)
            elif isinstance(node, ast.arg):
                self.bound.add(node.arg)
            elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
                self.bound.add(node.id)
            elif isinstance(node, ast.Call):
                calls.append(node)
        self.names |= self.imported
        self.not_modules = (self.bound - self.imported) | self.own  # first names that dotted() refuses
        changed = True
        while changed:  # until nothing more is bound to a module: a = torch; b = a; getattr(b, name)
            changed = False
            for target, value in bindings:
                if self.holds(value):
                    changed |= self._mark(target)
            for call in calls:
                if any(self.holds(a) for a in [*call.args, *(k.value for k in call.keywords)]):
                    for args in self._parameters(call.func, functions):
                        before = len(self.names)
                        self.names.update(a.arg for a in [*args.posonlyargs, *args.args, *args.kwonlyargs,
                                                          *filter(None, (args.vararg, args.kwarg))])
                        changed |= len(self.names) > before

    def dotted(self, node: ast.expr) -> str | None:
        """``_dotted``, where its first name may be a module of Python's or a library's: one imported,
        or one the file binds to nothing (a star import's). A tensor named ``signal`` is not the module,
        nor is the package's own ``gc.py`` (``from . import gc``)."""
        root = node
        while isinstance(root, ast.Attribute):
            root = root.value
        if isinstance(root, ast.Name) and root.id in self.not_modules:
            return None
        return _dotted(node, self.aliases)

    def holds(self, expr: ast.expr) -> bool:
        """May ``expr`` hold a module, or something reached from one?"""
        todo = [expr]
        while todo:
            node = todo.pop()
            if isinstance(node, ast.Name):
                if node.id in self.names:
                    return True
            elif isinstance(node, ast.Attribute):
                if node.attr in self.attrs:
                    return True
                todo.append(node.value)
            elif isinstance(node, (ast.Subscript, ast.Starred, ast.NamedExpr)):
                todo.append(node.value)
            elif isinstance(node, (ast.Tuple, ast.List, ast.Set)):
                todo += node.elts
            elif isinstance(node, ast.Dict):
                todo += node.values
            elif isinstance(node, ast.IfExp):
                todo += [node.body, node.orelse]
            elif isinstance(node, ast.BoolOp):
                todo += node.values
            elif isinstance(node, ast.Call):
                called = _dotted(node.func, self.aliases)
                if called in IMPORTERS or called in ("globals", "locals") or (called == "vars" and not node.args):
                    return True
                if called in self.THROUGH:
                    todo += node.args[:1]
                elif isinstance(node.func, ast.Attribute) and node.func.attr in self.LOOKUPS:
                    todo.append(node.func.value)
        return False

    def _mark(self, target: ast.expr) -> bool:
        """Bind ``target`` to a module; whether that is news."""
        before = len(self.names) + len(self.attrs)
        todo = [target]
        while todo:
            node = todo.pop()
            if isinstance(node, ast.Name):
                self.names.add(node.id)
            elif isinstance(node, ast.Attribute):
                self.attrs.add(node.attr)
            elif isinstance(node, (ast.Subscript, ast.Starred)):  # d["torch"] = torch: d holds a module
                todo.append(node.value)
            elif isinstance(node, (ast.Tuple, ast.List)):
                todo += node.elts
        return len(self.names) + len(self.attrs) > before

    @staticmethod
    def _parameters(func: ast.expr, functions: dict[str, list[ast.arguments]]) -> list[ast.arguments]:
        """The parameters of the file's functions that a call of ``func`` may bind: a lambda's, or those
        of every function of its name (a method's too, whatever it is called on)."""
        if isinstance(func, ast.Lambda):
            return [func.args]
        name = func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else None
        return functions.get(name, []) if name else []


def _aliases(nodes: list[ast.AST]) -> dict[str, str]:
    """Local name -> what it was imported as: ``import torch as t`` gives t -> torch, ``from torch
    import _C`` gives _C -> torch._C. Wherever the import is (in a function too)."""
    found: dict[str, str] = {}
    for node in nodes:
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
    """The row of FLAGS that the dotted ``name`` falls under, if any; Python's private twin of a
    flagged module (``_ctypes``, ``_signal``, ``_weakref``) falls under its row."""
    if not name or name in ("importlib", "importlib.import_module"):  # judged where it is called (_call)
        return None
    twin = name.startswith("_") and name.partition(".")[0] in sys.stdlib_module_names
    for candidate in (name, name[1:]) if twin else (name,):
        flag = next((flag for flag in NAMES if candidate == flag or candidate.startswith(flag + ".")), None)
        if flag:
            return flag
    return None


if __name__ == "__main__":
    _serve()
