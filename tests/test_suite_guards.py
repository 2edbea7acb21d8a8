"""The suite's own guards (``conftest.py``)."""
import os

from autograder.curriculum import STAGES
from autograder.grading.registry import max_points


def test_a_forked_child_that_raises_never_goes_on_as_a_second_test_process():
    """The child raises out of the test, as a fork whose os._exit was never reached would: it must end
    in the first hook it reaches (exit 70), not run on and report into this worker's channel."""
    pid = os.fork()
    if pid == 0:
        raise RuntimeError("a forked child that forgot its os._exit")
    assert os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]) == 70


def test_the_profile_of_checks_names_the_slowest_probes_and_judges(capsys):
    from tools import profile_checks

    profile_checks.main(["--top", "3", "--repeat", "1"])
    out = capsys.readouterr().out
    assert "the 3 slowest probes" in out and "the 3 slowest judges" in out
    assert out.count(" ms  s") == 6, out


def test_the_bench_times_each_grading_against_import_torch(capsys):
    from tools import bench

    bench.main(["--repeat", "1"])
    out = capsys.readouterr().out
    total = sum(max_points(s) for s in STAGES)  # every stage of the curriculum, an instructor's too
    assert f"{total}/{total}" in out and f"0/{total}" in out and out.count("x import torch") == 3, out


def test_a_gpu_run_cut_short_still_names_its_failures_and_why(tmp_path):
    """tests/gpu/run.sh's suite writes a report log as each test ends; failures.py reads it back, so a
    device run cut before pytest's summary (two were, on an H200) still shows each failure's frame."""
    import subprocess
    import sys

    from tests.gpu.failures import failures

    (tmp_path / "test_x.py").write_text(
        "def test_a():\n    weights = [1.0, 0.71]\n    assert sum(weights) == 1, 'row 3 sums to 0.71'\n"
        "def test_b():\n    pass\n")
    log = tmp_path / "report.jsonl"
    subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--report-log", str(log),
                    str(tmp_path / "test_x.py")], cwd=tmp_path, capture_output=True, timeout=120)
    said = list(failures(log.read_text().splitlines()))
    assert said[0] == "== test_x.py::test_a (call)", said
    assert any("row 3 sums to 0.71" in line for line in said) and said[-1].endswith("test_x.py:3"), said
    assert not any("test_b" in line for line in said)


def test_the_zoos_are_dealt_across_the_workers_and_every_other_module_stays_whole():
    """loadscope sends a module (or class) whole to one worker; a zoo's parametrized gradings go in parts,
    so that a machine of many cores does not wait on one worker's 591 gradings (conftest.DEALT)."""
    from tests.conftest import work_unit

    entries = [f"tests/test_zoo.py::test_wrong_entry_is_caught[s{i}_entry]" for i in range(200)]
    units = {work_unit(n, "tests/test_zoo.py", 8) for n in entries}
    assert len(units) == 8 and all(u.startswith("tests/test_zoo.py::test_wrong_entry_is_caught#") for u in units)
    hostile = "tests/test_zoo_hostile.py::TestAsUser::test_hostile_entry_is_contained[memory_bomb]"
    assert work_unit(hostile, "tests/test_zoo_hostile.py::TestAsUser", 8).startswith(
        "tests/test_zoo_hostile.py::TestAsUser::test_hostile_entry_is_contained#")
    for nodeid, scope in (("tests/test_zoo.py::test_zoo_is_big_enough", "tests/test_zoo.py"),
                          ("tests/test_nbgrader.py::test_x[a]", "tests/test_nbgrader.py"),
                          ("tests/test_load.py::test_y", "tests/test_load.py")):
        assert work_unit(nodeid, scope, 8) == scope
