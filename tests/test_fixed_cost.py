"""What a grading costs beyond ``import torch``, held by its premises (``python -m tools.bench``
measures the times; docs/benchmarks.md records them): no grading child imports torch's compiler,
the tamper watch's quick pass still sees every change, and the command's quick exit still does
what Python's own does."""
import subprocess
import sys
import textwrap

import torch

from autograder.paths import KIT_ROOT
from autograder.public.watch import Watch

AS_A_CHILD = textwrap.dedent("""
    import contextlib, sys
    import torch
    from autograder.sandbox import child, confine
    from autograder.public.watch import Watch

    if {settle}:
        child.preload(False)  # as the fork server does
    {work}
""")

EVERY_PROBE_ON_THE_REFERENCE = """
from autograder import probes
from autograder.grading.grade import plan
from autograder.grading.registry import all_checks
from autograder.sandbox.protocol import Task

sys.path.append({solutions!r})
table, lab, watch = probes.load(), probes.Lab({solutions!r}), Watch()
# A race is driven from the grading process: what its children run are its timed probes, each built
# (seed None) and then asked for a round.
timed = [(name, seed) for name, p in table.items() if p.timed for seed in (None, 1)]
# and the checks' twins, which a grading runs where a check failed
twins = [(Task("probe", c.twin, d), None) for c in all_checks() if c.twin for d in c.devices if d in ("cpu", "meta")]
for task, seed in [(t, None) for t in plan(all_checks(), {{"cpu", "meta"}})] + twins + [(Task("probe", n, "cpu"), s)
                                                                                        for n, s in timed]:
    if task.kind != "probe" or table[task.name].race:
        continue
    hand = None if table[task.name].library_attention else confine.HandWritten()
    torch.default_generator.manual_seed(0)
    args = (seed,) if table[task.name].timed else ()
    with torch.enable_grad(), hand or contextlib.nullcontext():
        result = lab.attempt(table[task.name].fn, lab, task.device, *args)
    assert not (isinstance(result, dict) and "error" in result), (task, result)
    assert watch.changes() == [], (task, watch.changes())
    assert "torch._dynamo" not in sys.modules, f"{{task.name}}@{{task.device}} imported torch._dynamo"
import torch._dynamo  # a submission that compiles: torch's own import of it changes nothing watched
assert watch.changes() == [], watch.changes()
print("ok")
"""


def as_a_child(work, settle=True):
    return subprocess.run([sys.executable, "-c", AS_A_CHILD.format(settle=settle, work=textwrap.dedent(work))],
                          capture_output=True, text=True, cwd=KIT_ROOT, timeout=300)


def test_no_probe_of_the_reference_imports_torch_compiler_and_its_import_changes_nothing_watched():
    done = as_a_child(EVERY_PROBE_ON_THE_REFERENCE.format(solutions=str(KIT_ROOT / "solutions")))
    assert done.returncode == 0 and done.stdout.strip() == "ok", done.stderr[-3000:]


def test_without_the_settled_wrappers_a_dispatch_mode_would_import_torch_compiler():
    """The premise of ``child.settle_dynamo_wrappers``: the kit's own dispatch mode (stage 1 on) is
    wrapped by torch so that its first call imports torch._dynamo (0.9 s) unless settled."""
    work = """
        with confine.HandWritten():
            torch.ones(2) @ torch.ones(2)
        print("torch._dynamo" in sys.modules)
    """
    assert as_a_child(work, settle=False).stdout.split() == ["True"]
    assert as_a_child(work, settle=True).stdout.split() == ["False"]


def test_the_watch_quick_pass_still_sees_and_undoes_every_change():
    watch = Watch()
    assert watch.changes() == [] and watch.changes() == []  # clean twice: the quick pass from now on
    real_allclose = torch.allclose
    torch.allclose = lambda *a, **k: True
    torch.Tensor.numel = lambda self: 0  # a method of its base class, shadowed
    torch.a_new_name = 1  # a new name on a module shadows nothing
    try:
        assert sorted(watch.changes()) == ["Tensor.numel", "torch.allclose"]
        assert torch.allclose is real_allclose and "numel" not in vars(torch.Tensor)
        assert watch.changes() == []
    finally:
        torch.allclose = real_allclose
        vars(torch.Tensor).get("numel") and delattr(torch.Tensor, "numel")
        del torch.a_new_name


def test_the_command_exit_runs_atexit_handlers_and_keeps_its_exit_status():
    code = ("import atexit, sys; from autograder import cli; atexit.register(print, 'atexit ran'); "
            "sys.exit(cli.console(['grade', 'no-such-folder']))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=KIT_ROOT, timeout=120)
    assert done.returncode == 2 and "no such file or directory" in done.stderr
    assert done.stdout.strip() == "atexit ran"


def test_the_judges_compute_on_one_thread_and_the_callers_number_is_kept(monkeypatch):
    """Beside busy processes, a judge on torch's default threads waited for a thread the machine held
    off a core (0.27 s instead of 1 ms each, 3 s a grading)."""
    from autograder.grading import grade as grading

    seen, real = [], grading.judge
    monkeypatch.setattr(grading, "judge", lambda *args: seen.append(torch.get_num_threads()) or real(*args))
    before = torch.get_num_threads()
    torch.set_num_threads(2)
    try:
        graded = grading.grade(KIT_ROOT / "solutions", stages={1})
        assert all(r.passed for r in graded.results) and set(seen) == {1}
        assert torch.get_num_threads() == 2
    finally:
        torch.set_num_threads(before)


def test_notebooks_are_validated_without_the_iri_grammar_and_still_refused_when_invalid(tmp_path):
    """nbformat's validator without jsonschema's IRI grammar (0.7 s of every grading of notebooks):
    a valid notebook passes, an invalid one is still refused, and the grammar can be imported after."""
    notebook = tmp_path / "stage1_simple.ipynb"
    notebook.write_text('{"cells": [{"cell_type": "code", "source": "x = 1", "metadata": {}, "outputs": [], '
                        '"execution_count": null}], "metadata": {}, "nbformat": 4, "nbformat_minor": 5}')
    broken = tmp_path / "stage2_self_attention.ipynb"
    broken.write_text('{"cells": [{"cell_type": "code", "source": 7}], "metadata": {}, "nbformat": 4, '
                      '"nbformat_minor": 5}')
    code = f"""
import importlib.util, sys
from pathlib import Path
from autograder.intake import notebooks
notebooks.read(Path({str(notebook)!r}))
print("rfc3987_syntax" in sys.modules)
try:
    notebooks.read(Path({str(broken)!r}))
except notebooks.NotebookError as exc:
    print("refused:", exc)
print(importlib.util.find_spec("rfc3987_syntax") is None or bool(__import__("rfc3987_syntax")))
"""
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=KIT_ROOT, timeout=120)
    lines = done.stdout.splitlines()
    assert done.returncode == 0 and lines[0] == "False" and lines[-1] == "True", done.stdout + done.stderr[-2000:]
    assert lines[1].startswith("refused: stage2_self_attention.ipynb is not a valid notebook"), lines


def test_the_command_starts_the_fork_server_before_anything_imports_torch():
    """``attention-lab grade`` starts the fork server first, so that its start (torch, the probes) runs on
    the other core beside the command's own import of torch: nothing the command does before it (the
    course's configuration and points, the registry's module) may import torch, or the two starts run one
    after the other (a stage's probes imported by the registry's module once cost every grading 0.7 s)."""
    code = textwrap.dedent("""
        import sys
        from autograder.sandbox import forkserver

        def boot(self):
            print("torch imported" if "torch" in sys.modules else "torch not imported yet")
            raise SystemExit(0)

        forkserver.ForkServer.boot = boot
        from autograder import cli
        cli.main(["grade", "assignments"])
    """)
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=KIT_ROOT, timeout=300)
    assert done.stdout.strip() == "torch not imported yet", done.stdout + done.stderr[-2000:]
