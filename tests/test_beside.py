"""A task apart (stage 8's speed race) runs in a child of its own, beside the child that runs the rest,
where the machine has a second core, a fork server that runs two children at once and a control group
for each child (``runner.room_beside``); elsewhere every task runs in one child, as before. Either way
each check gets the same verdict: the two ways are graded here side by side, for the reference, a race
that hangs, and an import that fails; and the two children are shown to have run at the same time."""
from __future__ import annotations

import time
from pathlib import Path

import pytest

from autograder.grading.grade import grade
from autograder.sandbox import runner
from autograder.sandbox.forkserver import ForkServer

ROOT = Path(__file__).resolve().parent.parent
RACE = "s8.fast.speed"
ONE_CHILD = runner._one_child


@pytest.fixture(scope="module")
def server():
    with ForkServer() as started:
        if runner.room_beside(started) is not None:
            pytest.skip(f"no child beside another here: {runner.room_beside(started)}")
        yield started


def children(monkeypatch):
    """The (start, end) of every child the runner starts from now on, and its tasks."""
    seen = []

    def timed(server, ws, tasks, pending, *args, **kwargs):
        start = time.monotonic()
        try:
            return ONE_CHILD(server, ws, tasks, pending, *args, **kwargs)
        finally:
            seen.append((start, time.monotonic(), [tasks[i].name for i in pending]))

    monkeypatch.setattr(runner, "_one_child", timed)
    return seen


def both_ways(folder, server, monkeypatch, **options):
    """The verdicts of ``folder`` graded with the race beside the rest, then in one child; and the
    children each way started."""
    beside = children(monkeypatch)
    apart = {r.id: r for r in grade(folder, server=server, **options).results}
    monkeypatch.setattr(runner, "room_beside", lambda server: "one child, for this test")
    alone = children(monkeypatch)
    together = {r.id: r for r in grade(folder, server=server, **options).results}
    return apart, beside, together, alone


def verdicts(results):
    """What a grading decides, but for the words that measure time (the race's milliseconds)."""
    return {k: (r.passed, r.points, r.feedback if k != RACE else r.passed) for k, r in results.items()}


def test_the_race_runs_beside_the_rest_and_every_check_gets_the_verdict_of_one_child(server, monkeypatch):
    apart, beside, together, alone = both_ways(ROOT / "solutions", server, monkeypatch, stages={8})
    assert all(r.passed for r in apart.values()), [k for k, r in apart.items() if not r.passed]
    assert verdicts(apart) == verdicts(together)
    assert len(alone) == 1 and RACE in alone[0][2]
    assert len(beside) == 2, beside
    (start_a, end_a, tasks_a), (start_b, end_b, tasks_b) = sorted(beside)
    assert start_b < end_a and start_a < end_b, "the two children did not run at the same time"
    race, rest = (tasks_a, tasks_b) if RACE in tasks_a else (tasks_b, tasks_a)
    assert [t for t in race if t != "modern"] == [RACE] and RACE not in rest  # each child imports the module


def with_modern(folder, code):
    """The reference, with ``code`` added to its modern.py."""
    (folder / "attention_lab").mkdir(parents=True)
    for path in (ROOT / "solutions" / "attention_lab").glob("*.py"):
        (folder / "attention_lab" / path.name).write_text(path.read_text())
    modern = folder / "attention_lab" / "modern.py"
    modern.write_text(modern.read_text() + code)
    return folder


def test_a_race_that_hangs_costs_the_speed_check_alone_either_way(server, monkeypatch, tmp_path):
    folder = with_modern(tmp_path / "hangs", '''

_fast_forward = FastMultiHeadAttention.forward


def _forward(self, x):
    if x.shape[1] == 2048:  # the race's size: nothing else the grader calls is this long
        while True:
            pass
    return _fast_forward(self, x)


FastMultiHeadAttention.forward = _forward
''')
    apart, _, together, _ = both_ways(folder, server, monkeypatch, stages={8}, timeout_s=2)
    assert verdicts(apart) == verdicts(together)
    assert [k for k, r in apart.items() if not r.passed] == [RACE] and "timed out" in apart[RACE].feedback


def test_a_layer_that_crashes_on_every_other_input_is_not_raced_either_way(server, monkeypatch, tmp_path):
    """Strikes count across both children: a layer whose code crashed twice before the race, in the
    plan's order, is not called again, wherever the race would have run (it ran fine on its own input)."""
    folder = with_modern(tmp_path / "crashes", '''

import os as _os

_fast_forward = FastMultiHeadAttention.forward


def _forward(self, x):
    if x.shape[1] != 2048:  # every check's input but the race's
        _os._exit(3)
    return _fast_forward(self, x)


FastMultiHeadAttention.forward = _forward
''')
    apart, _, together, _ = both_ways(folder, server, monkeypatch, stages={8}, timeout_s=3)
    assert verdicts(apart) == verdicts(together)
    assert not apart[RACE].passed and "crashed or hung 2 times already" in apart[RACE].feedback


def test_when_one_child_fails_the_grading_stops_and_says_why(server, monkeypatch, tmp_path):
    """The grader's own failure in the race's child (here: no control group for it) stops the other
    child too, and the grading raises that failure: nothing is graded on half a run."""
    from autograder.errors import GradingError

    real = runner._job_group
    calls = []

    def second_fails():
        calls.append(1)
        return (None, "refused for this test") if len(calls) == 2 else real()

    monkeypatch.setattr(runner, "_job_group", second_fails)
    with pytest.raises(GradingError, match="refused for this test"):
        grade(ROOT / "solutions", server=server, stages={8})


def test_a_module_that_fails_to_import_fails_every_check_the_same_way_in_both_children(server, monkeypatch, tmp_path):
    folder = with_modern(tmp_path / "broken", "")
    (folder / "attention_lab" / "modern.py").write_text("raise ImportError('no modern attention here')\n")
    apart, _, together, _ = both_ways(folder, server, monkeypatch, stages={8})
    assert verdicts(apart) == verdicts(together)
    assert not any(r.passed for r in apart.values())


def test_without_a_second_core_every_task_runs_in_one_child(monkeypatch):
    monkeypatch.setattr(runner.os, "sched_getaffinity", lambda pid: {0})
    with ForkServer() as started:
        assert runner.room_beside(started) == "this process may use one core"


def test_grade_alls_workers_run_one_child_per_grading(monkeypatch):
    """Several gradings share the machine there already: the cores are theirs, not a race's."""
    with ForkServer(beside=False) as started:
        assert runner.room_beside(started) == "this server's gradings run beside other gradings already"


def test_a_child_is_its_own_process_group_from_the_moment_it_is_said_started(monkeypatch, tmp_path):
    """A child that the grader stops at once (the other child failed: ``_kill`` at its start) is killed
    through its process group, which the child makes itself after the fork. Here that takes the child a
    second (as a busy machine may): the server says "started" only once the group is there, so the kill
    reaches the child. It once said it at the fork: the kill found no such group, the child lived on and
    stopped itself after its set-up, and the grading waited for its end for ever."""
    import os
    import signal
    import subprocess

    from autograder.sandbox import forkserver

    real = subprocess.Popen

    def slow_to_make_its_group(args, **kwargs):
        slow = "import os, time; _setsid = os.setsid; os.setsid = lambda: (time.sleep(1), _setsid())[1]; "
        return real([*args[:-1], slow + args[-1]], **kwargs)

    monkeypatch.setattr(forkserver.subprocess, "Popen", slow_to_make_its_group)
    job = tmp_path / "job.json"
    os.mkfifo(job)  # no one writes it: a child that outlived the kill would wait here, never end on its own
    with ForkServer() as server:
        child = server.start(job, tmp_path / "stderr", tmp_path, server.base_env())
        os.killpg(child.pid, signal.SIGKILL)  # ProcessLookupError: no such group yet
        assert child.wait(timeout=30) == -signal.SIGKILL


def test_a_child_that_outlives_its_kill_stops_the_grading_rather_than_hang_it():
    """The last layer under the one above: a child that has not ended ``KILLED_WITHIN_S`` after the kill of
    its group is reported (and the grading stops as the grader's failure), never waited for without end."""
    import subprocess

    class Outlives:
        pid = 2**22 + 1  # above the kernel's largest pid: no such group
        waited = None

        def poll(self):
            return None

        def wait(self, timeout=None):
            self.waited = timeout
            raise subprocess.TimeoutExpired("grading child", timeout)

    child = Outlives()
    assert runner._kill(child) is False and child.waited == runner.KILLED_WITHIN_S
