"""Source flags (``intake.review``): code that reaches for the interpreter's internals is named to the
instructor, in results.json and in grade-all's summary; honest code, the book's and the reference's,
never is (a false flag is a false alarm)."""
import json
import shutil

import pytest

from autograder.cli import main
from autograder.curriculum import STAGE_OF
from autograder.delivery.classrun.grade_all import grade_all
from autograder.delivery.classrun.summary import text_summary
from autograder.intake.review import FLAGS, review
from tools.zoo import CORRECT, HOSTILE, SOLUTIONS, WRONG, read_entry

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
])
def test_honest_forms_are_not_flagged(code):
    assert review({"m.py": code}) == []


@pytest.mark.parametrize("text", ["def (:", "a\x00b", "(" * 100_000 + ")" * 100_000, "x" + ".a" * 100_000,
                                  "[" * 300 + "]" * 300, "", "\udcff = 1"])
def test_a_file_that_does_not_parse_gives_no_flag_and_no_crash(text):
    found = review({"causal.py": text, "simple.py": "import gc"})
    assert found == ["simple.py line 1: gc (scans the interpreter's objects)"]


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


@pytest.mark.parametrize("path", CORRECT + WRONG, ids=[p.stem for p in CORRECT + WRONG])
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
