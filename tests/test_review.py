"""Source flags (``intake.review``): code that reaches for the interpreter's internals is named to the
instructor, in results.json and in grade-all's summary; honest code, the book's and the reference's,
never is (a false flag is a false alarm)."""
import json
import shutil
import subprocess
import sys

import pytest

from autograder.cli import main
from autograder.curriculum import STAGE_OF
from autograder.delivery.classrun.grade_all import grade_all
from autograder.delivery.classrun.summary import text_summary
from autograder.grading.grade import grade
from autograder.intake import review as review_module
from autograder.intake.review import FLAGS, MAX_FILE_BYTES, review
from autograder.intake.submission import open_submission
from autograder.sandbox.workspace import _write_package
from tools.zoo import CORRECT, HOSTILE, SEEDS, SOLUTIONS, WRONG, read_entry

# code -> what its findings name (after "causal.py line N: ")
FORMS = {
    "import sys\nf = sys._getframe(1)": "sys._getframe",
    "from sys import _getframe\n_getframe(1)": "sys._getframe",
    "import sys as s\ns._getframe": "sys._getframe",
    "import sys\ngetattr(sys, '_getframe')(1)": "sys._getframe",
    "import sys\nsys._current_frames()": "sys._current_frames",
    "import inspect": "inspect",
    "from inspect import currentframe": "inspect",
    "import traceback": "traceback",
    "import gc": "gc",
    "x = __import__('gc').get_objects()": "gc",
    "import torch\ntorch.ops.aten.scaled_dot_product_attention": "torch.ops",
    "from torch import ops": "torch.ops",
    "import torch\ntorch._C._nn.scaled_dot_product_attention": "torch._C",
    "import torch._C": "torch._C",
    "from torch._C import DisableTorchFunction": "torch._C",
    "from torch.overrides import TorchFunctionMode": "torch.overrides",
    "from torch.utils._python_dispatch import TorchDispatchMode": "torch.utils._python_dispatch",
    "import ctypes": "ctypes",
    "import autograder.probes.stage7": "autograder",
    "from torch.utils.data import dataloader\ndataloader.threading": "threading",
    "import torch.hub\nt = torch.hub._thread": "_thread",
    "def go(lib):\n    return lib.Thread(target=print)": "Thread",
    "import os\nos.getcwd = print": "module.attribute =",
    "import json as j\ndel j.loads": "module.attribute =",
    "import os\nfds = os.listdir('/proc/self/fd')": "/proc/self/fd",
    "flags = open(f'/proc/self/fdinfo/{fd}').read()": "/proc/self/fd",
    "import os\nos.read(4, 100)": "os.read",
    "from os import write\nwrite(5, b'1 abc')": "os.write",
    "import os\nf = os.fdopen(4)": "os.fdopen",
    "import os\nos.dup(4)": "os.dup",
    "import os\nos.dup2(4, 9)": "os.dup2",
    "import select": "select",
    "import selectors": "selectors",
    "from autograder.sandbox import confine": "autograder",
    "import cffi": "cffi",
    "import threading": "threading",
    "import _thread": "_thread",
    "def f(frame):\n    return frame.f_back": "f_back",
    "def f(frame):\n    return getattr(frame, 'f_back')": "f_back",
    "def f(frame):\n    return frame.f_locals": "f_locals",
    "def f(frame):\n    return frame.f_globals": "f_globals",
    "def f(tb):\n    return tb.tb_frame": "tb_frame",
    "def f(gen):\n    return gen.gi_frame": "gi_frame",
    "def f(fn):\n    return fn.__code__": "__code__",
    "def f(fn):\n    return fn.__globals__": "__globals__",
    "import sys\nsys.addaudithook(print)": "sys.addaudithook",
    "import sys\nsys.settrace(None)": "sys.settrace",
    "import sys\nsys.setprofile(None)": "sys.setprofile",
    "import sys\nsys.modules['autograder.probes']": "sys.modules",
    "import builtins": "builtins",
    "x = __builtins__": "__builtins__",
    "m = __import__(name)": "__import__",
    "import importlib\nm = importlib.import_module(name)": "__import__",
    "from importlib import reload": "importlib",
    "exec('x = 1')": "exec",
    "eval('1')": "eval",
    "compile('1', 'f', 'eval')": "compile",
    # another thread, or a time grading does not choose
    "import concurrent.futures": "concurrent.futures",
    "from concurrent.futures import ThreadPoolExecutor": "concurrent.futures",
    "import asyncio\nasyncio.to_thread(print)": "asyncio",
    "from multiprocessing.dummy import Pool": "multiprocessing.dummy",
    "from multiprocessing.pool import ThreadPool": "multiprocessing.pool",
    "import multiprocessing": "multiprocessing",
    "import _multiprocessing": "multiprocessing",
    "from logging.handlers import QueueListener": "logging.handlers",
    "import torch.multiprocessing as mp": "torch.multiprocessing",
    "from torch.utils.data import DataLoader": "torch.utils.data.DataLoader",
    "import torch\ntorch.jit.fork(print)": "torch.jit.fork",
    "import torch\ntorch.jit._fork(print)": "torch.jit._fork",
    "import torch\ntorch.futures.Future()": "torch.futures",
    "import torch.distributed.rpc": "torch.distributed",
    "import signal\nsignal.setitimer(signal.ITIMER_REAL, 0.01)": "signal",
    "from signal import signal": "signal",
    "import _signal": "signal",
    "import atexit": "atexit",
    "import weakref\nweakref.finalize(print, print)": "weakref",
    "class A:\n    def __del__(self):\n        pass": "__del__",
    # code, native or rebuilt, that this review cannot read
    "import _ctypes": "ctypes",
    "import torch.utils.cpp_extension": "torch.utils.cpp_extension",
    "def f(frame):\n    return frame.f_code": "f_code",
    "def f(gen):\n    return gen.gi_code": "gi_code",
    "def f(coro):\n    return coro.cr_code": "cr_code",
    "import marshal": "marshal",
    "import pickle": "pickle",
    "import codecs\ncodecs.register(print)": "codecs.register",
    "import sys\nsys.monitoring.use_tool_id(0, 'x')": "sys.monitoring",
    # a module or attribute reached by a name made at run time
    "import pkgutil": "pkgutil",
    "import pydoc": "pydoc",
    "import runpy": "runpy",
    "from operator import attrgetter": "operator.attrgetter",
    "import operator\noperator.methodcaller('x')": "operator.methodcaller",
    "def f(m, name):\n    return object.__getattribute__(m, name)": "__getattribute__",
    "import torch.nn.functional as F\nf = getattr(F, 'scaled_dot_' + 'product_attention')": "getattr",
    "f = getattr(__import__('torch'), name)": "getattr",
    "import torch\nf = getattr(torch.nn.functional, name)": "getattr",
    "import torch as t\nlib = t.nn\nf = getattr(lib, name)": "getattr",
    "import torch\nfor m in (torch, torch.nn):\n    getattr(m, name)": "getattr",
    "import torch\nlibs = {'f': torch.nn.functional}\ngetattr(libs.get('f'), name)": "getattr",
    "import torch\ndef get(m, n):\n    return getattr(m, n)\nget(torch, 'x' + 'y')": "getattr",
    "import torch\nclass A:\n    def __init__(self):\n        self.lib = torch\n    def f(self, name):\n"
    "        return getattr(self.lib, name)": "getattr",
    "import torch\ng = getattr\ng(torch, name)": "getattr",
    "import functools, torch\nfunctools.reduce(getattr, ['nn', 'functional'], torch)": "getattr",
    "import torch\nsetattr(torch.nn.functional, name, print)": "setattr",
    "import torch\ndelattr(torch, name)": "delattr",
    "import torch\nhasattr(torch, name)": "hasattr",
    "import torch\nvars(torch)[name]": "vars",
    "vars()[name]": "vars",
    "import torch\ntorch.nn.functional.__dict__[name]": "module.__dict__",
    "globals()[name]": "globals",
    "locals()[name]": "locals",
    "from importlib import import_module\nim = import_module": "__import__",
    "e = eval": "eval",
}


@pytest.mark.parametrize("code", FORMS)
def test_each_form_is_flagged_with_its_file_line_and_why(code):
    found = review({"causal.py": "\n\n" + code})  # its lines are 3, 4, ...
    why = FLAGS[next(k for k in FLAGS if k.strip(".()") == FORMS[code])]
    said = [f"causal.py line {n}: {FORMS[code]} ({why})" for n in range(3, code.count("\n") + 4)]
    assert found and set(found) <= set(said), found


def test_every_row_of_the_table_is_exercised():
    assert {k.strip(".()") for k in FLAGS} == set(FORMS.values())


@pytest.mark.parametrize("code", [
    "import torch\nimport torch.nn.functional as F\nF.scaled_dot_product_attention",  # allowed where a stage allows it
    "import importlib\nm = importlib.import_module('math')",  # a literal name is an import
    "m = __import__('math')",
    "model.eval()\nre.compile('x')\ntorch.compile",  # methods that share a builtin's name
    "def __exit__(self, exc_type, exc, tb):\n    return False",
    # names made at run time on the student's own objects, as model code names its layers
    "class A:\n    def f(self, name):\n        return getattr(self, name)",
    "def f(module):\n    return getattr(module, 'bias', None)",
    "class A:\n    def __init__(self, n):\n        for i in range(n):\n            setattr(self, f'head_{i}', None)",
    "import torch\ndef f(layers, name):\n    return [getattr(layer, name) for layer in layers]",
    "import torch.nn as nn\nact = getattr(nn, 'GELU')()",  # a literal name is written, and read
    "import torch\nx = torch.ones(2, dtype=torch.float64)\ny = getattr(x, 'T')",
    "import torch\nsignal = torch.ones(3)\nsignal.shape",  # a tensor named like a module
    "def f(x, eval=False):\n    return x if eval else -x",  # a parameter named like a builtin
    "from . import gc\ngc.collect()",  # the package's own gc.py, reviewed as a file of its own
])
def test_honest_forms_are_not_flagged(code):
    assert review({"m.py": code}) == []


@pytest.mark.parametrize("text", ["def (:", "a\x00b", "(" * 100_000 + ")" * 100_000,
                                  "[" * 300 + "]" * 300, "", "\udcff = 1"])
def test_a_file_that_does_not_parse_gives_no_flag_and_no_crash(text):
    found = review({"causal.py": text, "simple.py": "import gc"})
    assert found == ["simple.py line 1: gc (scans the interpreter's objects)"]


# A file CPython can parse but not build the tree of within its recursion limit: a child that raises the
# limit first imports it, so it is flagged, never passed over as a file that does not parse.
@pytest.mark.parametrize("text", ["x" + ".a" * 100_000, "f" + "()" * 100_000, "a" + "+a" * 100_000])
def test_a_file_nested_too_deep_to_review_is_flagged_as_such(text):
    found = review({"causal.py": text, "simple.py": "import gc"})
    assert found == ["causal.py: too deeply nested to review", "simple.py line 1: gc (scans the interpreter's objects)"]


def test_the_file_is_read_as_the_import_reads_it_by_its_coding_declaration():
    hidden = b"# coding: utf-7\n+AAo-import ctypes\n"  # utf-7's +AAo- is a newline: the import is on line 3
    assert review({"causal.py": hidden}) == ["causal.py line 3: ctypes (calls native code)"]
    assert review({"causal.py": b"# coding: made_at_run_time\nx = 1\n"}) == [
        "causal.py: declares an encoding this review does not know (unknown encoding: made_at_run_time)"]


def test_a_huge_or_deep_module_is_flagged_at_once_and_the_grader_does_not_grow():
    """In a process of its own: the grader's peak (ru_maxrss) with a 6 MiB module, which in the grader's
    own process took 5.5 GiB and half a minute to parse, and a module nested 100,000 deep."""
    script = """if True:
        import json, resource, time
        from autograder.intake.review import review
        sources = {"causal.py": b"a\\n" * (3 * 2**20), "simple.py": b"x" + b".a" * 100_000,
                   "buffers.py": b"import gc"}
        before, started = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss, time.monotonic()
        found = review(sources)
        grown = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before
        print(json.dumps([found, time.monotonic() - started, grown / 1024]))
    """
    ran = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60, check=True,
                         cwd=SOLUTIONS.parent.parent)
    found, seconds, grown_mib = json.loads(ran.stdout)
    assert found == ["buffers.py line 1: gc (scans the interpreter's objects)",
                     f"causal.py: too large to review (6.0 MiB; at most {MAX_FILE_BYTES / 2**20:.1f} MiB)",
                     "simple.py: too deeply nested to review"]
    assert seconds < 5 and grown_mib < 4, (seconds, grown_mib)


def test_a_module_that_runs_the_review_out_of_memory_is_flagged_and_the_next_is_still_read():
    dense = "a\n" * (MAX_FILE_BYTES // 2)  # within the bound in bytes, a name a line: ~470 MiB to parse
    found = review({"causal.py": dense, "simple.py": "import gc"})
    assert found == [f"causal.py: the review ran out of memory on it (at most {review_module.MEMORY_BYTES >> 20} MiB)",
                     "simple.py line 1: gc (scans the interpreter's objects)"]


def test_a_module_that_runs_the_review_out_of_time_is_flagged_and_so_are_those_it_kept_from_review(monkeypatch):
    monkeypatch.setattr(review_module, "WALL_S", 1)
    # each binding of a module is seen only after the one below it: a pass over the file for each
    chain = "".join(f"a{i} = a{i - 1}\n" for i in range(20_000, 0, -1)) + "import torch as a0\n"
    found = review({"causal.py": chain, "simple.py": "import gc"})
    assert found == ["causal.py: the review ran out of time on it (at most 1 s in all)",
                     "simple.py: not reviewed: the review ran out of time before it (at most 1 s in all)"]


def test_findings_past_the_bound_are_counted_not_listed():
    found = review({"causal.py": "import gc\n" * (review_module.MAX_FINDINGS + 5)})
    assert len(found) == review_module.MAX_FINDINGS + 1 and found[-1] == "5 more findings, not listed"


def test_findings_are_in_file_and_line_order():
    found = review({"simple.py": "import gc\n" + "\n" * 10 + "import inspect", "causal.py": "\n" * 2 + "import gc"})
    assert [f.split(":")[0] for f in found] == ["causal.py line 3", "simple.py line 1", "simple.py line 12"]


def assembled(path):
    """A zoo entry as it is graded: appended to the reference's module."""
    module = read_entry(path)["MODULE"]
    return {f"{module}.py": (SOLUTIONS / f"{module}.py").read_text() + "\n\n" + path.read_text()}


def test_the_reference_and_the_stubs_are_not_flagged(root):
    for package in (SOLUTIONS, root / "assignments" / "attention_lab"):
        assert review({p.name: p.read_text() for p in sorted(package.glob("*.py"))}) == []


@pytest.mark.parametrize("path", CORRECT + WRONG + SEEDS, ids=[p.stem for p in CORRECT + WRONG + SEEDS])
def test_honest_zoo_entries_are_not_flagged(path):
    assert review(assembled(path)) == []


# The hostile entries that reach for the interpreter's internals, and what names them.
REACHES = {"walks_frames": "f_back", "reads_callers_frame": "sys._getframe", "scans_gc": "gc",
           "transformer_aten_sdpa": "torch.ops", "causal_sdpa_torch_function_off": "torch._C",
           "torch_function_mode": "torch.overrides"}


@pytest.mark.parametrize("stem", REACHES)
def test_hostile_entries_that_reach_into_the_interpreter_are_flagged(stem):
    found = review(assembled(next(p for p in HOSTILE if p.stem == stem)))
    assert any(f": {REACHES[stem]} (" in f for f in found), found


GETFRAME = '''

import sys


def causal_weights_by_fill(attn_scores, d_k):
    sys._getframe(0)  # its own frame: allowed, and still worth a look
    n = attn_scores.shape[-1]
    hidden = torch.triu(torch.ones(n, n, dtype=torch.bool, device=attn_scores.device), diagonal=1)
    return torch.softmax(attn_scores.masked_fill(hidden, -torch.inf) / d_k ** 0.5, dim=-1)
'''


def student_using_getframe(folder):
    shutil.copytree(SOLUTIONS, folder / "attention_lab")
    causal = folder / "attention_lab" / "causal.py"
    text = causal.read_text()
    causal.write_text(text + GETFRAME)
    return text.count("\n") + GETFRAME.count("\n") - GETFRAME.split("sys._getframe")[1].count("\n") + 1


def test_grade_json_carries_the_flag_and_the_grade_is_untouched(tmp_path):
    line = student_using_getframe(tmp_path / "sam")
    out = tmp_path / "results.json"
    assert main(["grade", str(tmp_path / "sam"), "--stage", "3", "--json", str(out)]) == 0
    data = json.loads(out.read_text())
    assert data["extra_data"]["flagged_for_review"] == [
        f"causal.py line {line}: sys._getframe (reads the interpreter's frames)"]
    assert all(t["status"] == "passed" for t in data["tests"])  # a flag is never scored

    main(["grade", str(SOLUTIONS.parent), "--stage", "3", "--json", str(out)])
    assert json.loads(out.read_text())["extra_data"]["flagged_for_review"] == []


def test_grade_all_records_the_flag_and_names_the_student_in_its_summary(tmp_path, capsys):
    folder = tmp_path / "submitted"
    student_using_getframe(folder / "sam")
    shutil.copytree(SOLUTIONS, folder / "ada" / "attention_lab")
    out = tmp_path / "grades.csv"
    assert grade_all(folder, out, jobs=1, stages=[STAGE_OF["causal"]], log=lambda _: None) == 0
    records = out.with_name("grades-results")
    assert json.loads((records / "ada.json").read_text())["extra_data"]["flagged_for_review"] == []
    assert len(json.loads((records / "sam.json").read_text())["extra_data"]["flagged_for_review"]) == 1
    summary = out.with_suffix(".txt").read_text()
    assert "flagged for review: sam: causal.py line " in summary and "ada" not in summary.split("flagged")[1]


def test_the_summary_names_each_flagged_student_with_the_first_finding_and_how_many_more():
    text = text_summary([("a", 11, {1: 11}), ("b", 11, {1: 11})], 11, {1: 11},
                        flagged=[("b", ["simple.py line 3: gc (scans the interpreter's objects)", "second", "third"])])
    assert "flagged for review: b: simple.py line 3: gc (scans the interpreter's objects) (+2 more)" in text
    assert "flagged for review: a" not in text
    one = text_summary([("a", 11, {1: 11})], 11, {1: 11}, flagged=[("a", ["simple.py line 1: gc (x)"])])
    assert "flagged for review: a: simple.py line 1: gc (x)\n" in one


def test_a_helper_module_and_a_sub_package_are_reviewed_by_their_path():
    found = review({"_impl.py": "import torch\nf = getattr(torch.nn.functional, name)",
                    "sub/helpers.py": "\nimport gc", "multihead.py": "from ._impl import f"})
    assert found == ["_impl.py line 2: getattr (reaches a module's attribute by a name made at run time)",
                     "sub/helpers.py line 2: gc (scans the interpreter's objects)"]


def test_the_review_is_given_every_file_the_child_can_import(tmp_path):
    """``Submission.package_files`` is the package the sandbox writes for the child, file for file."""
    package = tmp_path / "sam" / "attention_lab"
    shutil.copytree(SOLUTIONS, package, ignore=shutil.ignore_patterns("__pycache__"))
    (package / "_impl.py").write_text("import gc\n")
    (package / "sub").mkdir()
    (package / "sub" / "helpers.py").write_text("\nimport ctypes\n")
    sub = open_submission(tmp_path / "sam")
    sub.give({"buffers": "given = True\n"})
    written = tmp_path / "written" / "attention_lab"
    _write_package(sub.package_files(), written)
    files = sub.package_files()
    assert files == {p.relative_to(written).as_posix(): p.read_bytes() for p in written.rglob("*") if p.is_file()}
    assert {"_impl.py", "sub/helpers.py", "__init__.py"} <= set(files) and files["buffers.py"] == b"given = True\n"
    assert review(files) == ["_impl.py line 1: gc (scans the interpreter's objects)",
                             "sub/helpers.py line 2: ctypes (calls native code)"]


IMPL = """\"\"\"What multihead.py borrows.\"\"\"
import torch


def functions_off():
    return torch._C.DisableTorchFunction
"""


def test_grading_flags_a_helper_module_that_the_graded_module_imports(tmp_path, grading_server):
    package = tmp_path / "sam" / "attention_lab"
    shutil.copytree(SOLUTIONS, package, ignore=shutil.ignore_patterns("__pycache__"))
    (package / "_impl.py").write_text(IMPL)
    multihead = package / "multihead.py"
    multihead.write_text(multihead.read_text() + "\n\nfrom ._impl import functions_off  # noqa: E402,F401\n")
    graded = grade(tmp_path / "sam", stages={4}, server=grading_server)
    assert graded.flagged == ["_impl.py line 6: torch._C (calls torch's C++ bindings directly)"]
    assert all(r.passed for r in graded.results)  # a flag is never scored
