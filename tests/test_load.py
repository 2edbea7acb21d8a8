"""Verdicts that do not depend on load, and a grader that bounds itself.

- A task's clock is its own time: the time it sat runnable while the machine ran others is not
  charged (``runner.UNCHARGED_WAIT``); shown able to fail by charging it. A machine so busy that a
  check cannot finish stops the grading as the grader's failure, never as a verdict.
- The reference keeps full marks graded beside 2 x cores of busy processes, 5 times of 5, and so does
  a ``grade-all`` of 8 honest copies with the default workers.
- A child's memory cgroup counts what ``RLIMIT_AS`` does not (``memfd`` pages); shown able to fail.
- ``grade-all`` never waits on one grading past its limit: that student's row says it took too long.
"""
from __future__ import annotations

import csv
import json
import os
import select
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from autograder.delivery.classrun import grade_all as grade_all_module
from autograder.delivery.classrun import worker as worker_module
from autograder.grading.config import CourseConfig
from autograder.sandbox import cgroups, runner, workspace
from tools.bench import busy

ROOT = Path(__file__).resolve().parent.parent
REQUIRED = os.environ.get("ATTENTION_LAB_ISOLATION_TESTS") == "required"


def needs(ok, why):
    if not ok:
        (pytest.fail if REQUIRED else pytest.skip)(why)


# A stage-1 function whose check needs about 2 s of CPU (its probe calls it twice, with the book's inputs
# and with another set): inside a 3 s limit on a quiet CPU, past it when it gets a third of one. At
# 1.5 s a call the check needed 3 s of CPU, its limit: beside busy processes it kept its check by noise.
SLOW_BUT_HONEST = '''

def context_vector(inputs, weights):
    import time
    end = time.process_time() + 1.0
    while time.process_time() < end:
        pass
    return weights @ inputs
'''

STARVED_SCRIPT = '''
import json, os, sys
sys.path.insert(0, sys.argv[1])
from autograder.errors import GradingError
from autograder.sandbox import runner
from autograder.grading.grade import grade
from autograder.sandbox.forkserver import ForkServer
with ForkServer() as server:
    server.boot()._ensure_running()  # torch imported while the CPU is quiet: the load is the task's alone
    for request in sys.stdin:  # one grading a line: the submission and the runner's settings for it
        asked = json.loads(request)
        kept = {name: getattr(runner, name) for name in asked["settings"]}
        for name, value in asked["settings"].items():
            setattr(runner, name, value)
        print("warm", flush=True)
        sys.stdin.readline()  # the busy processes have started
        try:
            graded = grade(asked["submission"], stages={1}, timeout_s=3, server=server)
        except GradingError as exc:
            said = {"grading_error": str(exc)}
        else:
            r = next(r for r in graded.results if r.id == "s1.context_vector")
            said = {"passed": r.passed, "feedback": r.feedback}
        for name, value in kept.items():
            setattr(runner, name, value)
        print(json.dumps(said), flush=True)
'''


# The same check, but the task first makes itself wait (allowed on itself): the lowest priority, so that
# beside busy processes it sits runnable and passes for starved.
STANDS_ASIDE = SLOW_BUT_HONEST.replace("    import time\n", "    import os, time\n    os.nice(19)\n")


class WarmGrader:
    """A grading process and its fork server on CPU 0 (``STARVED_SCRIPT``), kept for the next grading: the
    process imports the grader, and the server torch, once, not once a test (about 4 s each on one CPU).
    Each grading is its own child as ever. A grading that did not answer ends the process, and the next
    one starts afresh: what one test left half done never reaches another."""

    def __init__(self, errors):
        self.errors, self.proc = errors, None

    def line(self, seconds):
        said = select.select([self.proc.stdout], [], [], seconds)[0]
        return self.proc.stdout.readline().strip() if said else ""

    def ask(self, submission, settings):
        """Send the grading; True once the server is warm and waits for ``go``."""
        if self.proc is not None and self.proc.poll() is not None:
            self.close()  # it ended (a crash): its output and its exit are collected, and a fresh one starts
        if self.proc is None:
            with self.errors.open("a") as stderr:
                self.proc = subprocess.Popen([sys.executable, "-c", STARVED_SCRIPT, str(ROOT)], stdin=subprocess.PIPE,
                                             stdout=subprocess.PIPE, stderr=stderr, text=True,
                                             preexec_fn=lambda: os.sched_setaffinity(0, {0}))
        self.proc.stdin.write(json.dumps({"submission": str(submission), "settings": settings}) + "\n")
        self.proc.stdin.flush()
        return self.line(300) == "warm"  # its imports and the fork server's, done quiet

    def go(self):
        self.proc.stdin.write("go\n")
        self.proc.stdin.flush()
        return self.line(300)

    def close(self):
        if self.proc is not None:
            self.proc.kill()  # never a test that waits for ever
            self.proc.communicate()
            self.proc = None


@pytest.fixture(scope="module")
def starved_grader(tmp_path_factory):
    grader = WarmGrader(tmp_path_factory.mktemp("starved") / "stderr")
    try:
        yield grader
    finally:
        grader.close()


def graded_on_one_busy_cpu(starved_grader, tmp_path, code=SLOW_BUT_HONEST, **runner_settings):
    """Grade the slow-but-honest stage 1 with the grader, its children and two busy processes all
    on CPU 0, with ``runner_settings`` in place of the runner's. Each busy process and the child have a
    session of their own, and the scheduler shares a CPU between sessions: the task gets about a third
    of the CPU (the grader mostly sleeps), so its 2 s of CPU take about 6 s of wall clock against its
    limit of 3 s. The busy processes start once the grader and its fork server have imported torch (and
    stop before the next test): the load falls on the graded task, and the test does not wait for imports
    at a third of a CPU. With the busy processes in one session, its share was a half to two thirds, and
    that 3 s limit was within the noise of both sides."""
    sub = tmp_path / "slow"
    shutil.copytree(ROOT / "solutions" / "attention_lab", sub / "attention_lab")
    simple = sub / "attention_lab" / "simple.py"
    simple.write_text(simple.read_text() + code)
    warm = starved_grader.ask(sub, runner_settings)
    with busy(2 * warm, cpus={0}, sessions=True):
        said = starved_grader.go() if warm else ""
    if not said:
        starved_grader.close()
    assert said, f"the grading process said nothing:\n{starved_grader.errors.read_text()[-3000:]}"
    return json.loads(said)


def test_a_task_held_up_by_the_machine_keeps_its_check(starved_grader, tmp_path):
    seen = graded_on_one_busy_cpu(starved_grader, tmp_path)
    assert seen.get("passed"), seen


def test_its_own_clock_alone_keeps_the_check(starved_grader, tmp_path):
    """No second run (nothing counts as held up): the clock that leaves out the wait is enough."""
    needs(_kernel_keeps_waits(), "the kernel keeps no run-queue waits here")
    seen = graded_on_one_busy_cpu(starved_grader, tmp_path, STARVED_SHARE=1e9)
    assert seen.get("passed"), seen


def test_with_the_wait_charged_and_no_more_time_alone_the_busy_machine_costs_the_check(starved_grader, tmp_path):
    """Both layers taken away (the wait counts against the task, and the second run, which every
    timeout gets here, has no more time than the first): the same honest code loses the check, and
    the feedback says it was run again alone."""
    seen = graded_on_one_busy_cpu(starved_grader, tmp_path, UNCHARGED_WAIT=False, STARVED_SHARE=-1.0,
                                  ALONE_WALL_FACTOR=1.0)
    assert seen.get("passed") is False and "run again alone with 3 s" in seen["feedback"], seen


def test_a_machine_too_busy_to_grade_stops_the_grading_rather_than_charge_the_check(starved_grader, tmp_path):
    """With only 1.2 x its time in wall clock, the starved task cannot finish: the grading stops as
    the grader's failure, and says why."""
    needs(_kernel_keeps_waits(), "the kernel keeps no run-queue waits here")
    seen = graded_on_one_busy_cpu(starved_grader, tmp_path, BUSY_WALL_FACTOR=1.2)
    assert "too busy to grade" in seen.get("grading_error", ""), seen


def test_a_task_that_makes_itself_wait_is_charged_not_excused_as_starved(starved_grader, tmp_path):
    """Reniced to 19 beside busy processes, the task waits nearly all the time and uses no CPU: past
    the backstop it is charged with its timeout, not excused as the machine's (which would leave the
    student ungraded, "not the submission's fault")."""
    needs(_kernel_keeps_waits(), "the kernel keeps no run-queue waits here")
    seen = graded_on_one_busy_cpu(starved_grader, tmp_path, STANDS_ASIDE, BUSY_WALL_FACTOR=1.2)
    assert seen.get("passed") is False and "timed out after 3 s" in seen["feedback"], seen


def _kernel_keeps_waits():
    """Whether this kernel counts run-queue waits: a process that shares one CPU with a busy one
    waits."""
    with busy(1, cpus={0}):
        pid = os.fork()
        if pid == 0:
            code = 1
            try:
                os.sched_setaffinity(0, {0})
                end = time.monotonic() + 0.3
                while time.monotonic() < end:
                    pass
                code = 0 if runner._waited(os.getpid()) > 0.01 else 1
            finally:
                os._exit(code)
        return os.waitpid(pid, 0)[1] == 0


def test_the_reference_keeps_full_marks_under_load_5_times_of_5(root):
    from autograder.grading.grade import grade

    full = CourseConfig().max_points()
    seconds = []
    with busy(2 * (os.cpu_count() or 1)):
        for _ in range(5):
            graded = grade(root / "solutions")
            lost = [r.id for r in graded.results if not r.passed]
            assert not lost and sum(r.points for r in graded.results) == full, lost
            seconds.append(graded.seconds)
    print(f"graded under load in {', '.join(f'{s:.1f}' for s in seconds)} s")


def test_a_class_of_8_honest_copies_keeps_full_marks_under_load(root, tmp_path):
    klass = tmp_path / "submitted"
    for i in range(8):
        shutil.copytree(root / "solutions" / "attention_lab", klass / f"s{i}" / "attention_lab")
    out = tmp_path / "grades.csv"
    with busy(2 * (os.cpu_count() or 1)):
        assert grade_all_module.grade_all(klass, out, log=lambda _: None) == 0
    full = str(CourseConfig().max_points())
    rows = list(csv.DictReader(out.open()))
    assert len(rows) == 8 and all(r["total"] == full for r in rows), rows


MEMFD = '''
import os
fd = os.memfd_create("held")
block = b"x" * (8 * 2**20)
for _ in range({blocks}):
    os.write(fd, block)
print("held", flush=True)
'''


def held_in_memfd(group, blocks):
    """Run a process that writes ``blocks`` x 8 MiB into a memfd file, in ``group`` when given;
    returns its exit code (0: it held all of it)."""
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:
        try:
            os.close(write)
            os.read(read, 1)  # wait until it is in its group
            os.execv(sys.executable, [sys.executable, "-c", MEMFD.format(blocks=blocks)])
        finally:
            os._exit(127)
    os.close(read)
    if group is not None:
        group.add(pid)
    os.write(write, b"go")
    os.close(write)
    return os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1])


def test_a_memory_cgroup_counts_memfd_pages_that_rlimit_as_does_not():
    why = cgroups.unavailable()
    needs(why is None and workspace.is_root(), f"no cgroup for a grading child here: {why}")
    group = cgroups.JobGroup(128 * 2**20, 64)
    folders = list(group.folders)
    try:
        assert held_in_memfd(group, 32) == -9  # 256 MiB in a group of 128 MiB: the kernel kills it
        assert group.ran_out_of_memory()
    finally:
        group.remove()
    assert held_in_memfd(None, 32) == 0  # the layer taken away: the same pages are held
    assert not [f for f in folders if f.exists()], "a group was left behind"


def test_a_group_left_by_a_killed_grading_is_reclaimed():
    why = cgroups.unavailable()
    needs(why is None and workspace.is_root(), f"no cgroup for a grading child here: {why}")
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    group = cgroups.JobGroup(2**30, 64)
    stale = [f.with_name(f"{cgroups.PREFIX}{dead.stdout.strip()}-left") for f in group.folders]
    group.remove()
    for folder in stale:
        folder.mkdir()
    cgroups.JobGroup(2**30, 64).remove()  # the next grading
    assert not [f for f in stale if f.exists()]


def test_grade_all_gives_up_on_a_grading_that_never_returns(root, tmp_path, monkeypatch):
    """A grading stuck in the grader itself (here: a grade() that never returns for one student)
    costs that student a row that says so; the class goes on and grade-all ends."""
    klass = tmp_path / "submitted"
    for name in ("ann", "zed"):
        shutil.copytree(root / "solutions" / "attention_lab", klass / name / "attention_lab")
    real = worker_module.grade

    def stuck(path, **kwargs):
        if path.name == "zed":
            time.sleep(3600)
        return real(path, **kwargs)

    monkeypatch.setattr(worker_module, "grade", stuck)
    # 15 s: far past what ann's stage 1 takes even beside another test worker, far short of zed's hour
    monkeypatch.setattr(grade_all_module, "grading_limit_s", lambda *a: 15.0)
    out = tmp_path / "grades.csv"
    start = time.monotonic()
    assert grade_all_module.grade_all(klass, out, stages=[1], jobs=2, log=lambda _: None) == 1
    assert time.monotonic() - start < 90
    rows = {r["student"]: r for r in csv.DictReader(out.open())}
    assert rows["ann"]["total"] == str(CourseConfig().max_points(1))
    assert rows["zed"]["total"] == "" and "took too long" in rows["zed"]["problem"], rows["zed"]
