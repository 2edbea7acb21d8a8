"""The suite's own guards (``conftest.py``)."""
import os


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
    assert "300/300" in out and "0/300" in out and out.count("x import torch") == 3, out
