"""What the child says is never a verdict (``sandbox.protocol``, ``sandbox.runner``): the grader asks for
one task at a time on a FIFO only it writes, and takes an answer only for the request it made; it times
each request from outside the child; the race's reference runs in a child of the kit's own while the
student's is stopped; and a check of a stage written by hand runs with no thread of the child's own,
with a cgroup or without one. The attacks themselves are hostile entries (tests/zoo/hostile/)."""
from __future__ import annotations

import json
import os

import pytest

from autograder.grading.config import CourseConfig
from autograder.grading.grade import grade
from autograder.sandbox import protocol, runner
from autograder.sandbox.protocol import Request, Task
from tools.zoo import HOSTILE, assemble, read_entry


def test_a_request_reads_back_as_written_and_nothing_else_is_one():
    asked = Request(3, Task("probe", "s3.causal.seeded", "cpu"), None, True)
    assert Request.parse(asked.line().rstrip(b"\n")) == asked
    timed = Request(12, Task("probe", "s8.fast.timed", "cpu"), 2**31 - 1)
    assert Request.parse(timed.line()) == timed
    assert asked.token != timed.token != Request(12, timed.task, timed.seed).token  # one for each request
    assert asked.answer_line() == f"3 {asked.token}\n".encode()
    task = '{"kind": "probe", "name": "s1.scores", "device": "cpu"}'
    for junk in (b"", b"3", b"{}", b"\xff\xfe", b"[1, 2]",
                 f'{{"n": "3", "task": {task}, "seed": null, "hand": false, "token": "ab"}}'.encode(),  # n: no number
                 f'{{"n": 3, "task": {task}, "seed": "1", "hand": false, "token": "ab"}}'.encode(),  # seed: no number
                 f'{{"n": 3, "task": {task}, "seed": null, "hand": 1, "token": "ab"}}'.encode(),  # hand: no bool
                 f'{{"n": true, "task": {task}, "seed": null, "hand": false, "token": "ab"}}'.encode(),  # True: an int
                 f'{{"n": 3, "task": {task}, "seed": null, "hand": false}}'.encode(),  # no token
                 f'{{"n": 3, "task": {task}, "seed": null, "hand": false, "token": "../x"}}'.encode(),  # a path
                 b'{"n": 3, "task": {"kind": 1, "name": "x", "device": "cpu"}, "seed": null, "hand": false, '
                 b'"token": "a"}',
                 b'{"n": 3, "task": {"kind": "probe"}, "seed": null, "hand": false, "token": "a"}'):
        assert Request.parse(junk) is None, junk


def test_the_child_reads_requests_line_by_line_and_skips_what_is_no_request():
    """What the student's code may write to its own end of the FIFO is skipped; the grader's requests,
    however the pipe splits them, are read whole and in order."""
    first = Request(1, Task("import", "simple"))
    second = Request(2, Task("probe", "s1.scores", "cpu"), hand=True)
    # The loop reads with os.read and json.loads as they were before the submission's code ran.
    import json as json_module

    assert protocol.requests.__defaults__ == (os.read,) and Request.parse.__defaults__ == (json_module.loads,)
    read, write = os.pipe()
    line = second.line()
    os.write(write, b"junk\n" + first.line() + b"x" * (protocol.REQUEST_MAX_BYTES + 10) + b"\n" + line[:7])
    os.write(write, line[7:])
    os.close(write)
    try:
        assert list(protocol.requests(read)) == [first, second]
    finally:
        os.close(read)


def test_cpu_is_what_the_threads_counted_or_the_process_total_where_it_outgrew_them():
    tick = 1 / os.sysconf("SC_CLK_TCK")
    before = {"10": 1_000_000_000, "11": 0}
    after = {"10": 1_030_000_000, "12": 5_000_000}  # thread 11 ended; thread 12 started
    assert runner._cpu_between(before, 5.0, after, 5.0 + 0.035 + tick) == pytest.approx(0.035)  # within a tick
    # The total grew by far more than the threads there now show: threads came and went in between.
    assert runner._cpu_between(before, 5.0, after, 5.5) == pytest.approx(0.5)


def test_a_course_with_more_threads_grades_the_stages_written_by_hand_in_full(root):
    """torch's threads start in the child's set-up (``child._warm_threads``): a check of a stage written
    by hand, where the child may start none, gets the threads the course gives torch."""
    graded = grade(root / "solutions", stages={3, 7}, config=CourseConfig(threads=2))
    assert all(r.passed for r in graded.results), [(r.id, r.feedback) for r in graded.results if not r.passed]


def test_without_a_cgroup_a_thread_left_running_still_refuses_the_checks(root, tmp_path, monkeypatch):
    """Where the grader has no cgroup to hold the child's threads, it still sees from ``/proc`` a thread
    that the module's import started, and refuses what ran beside it."""
    monkeypatch.setattr(protocol, "KERNEL_LAYERS", tuple(k for k in protocol.KERNEL_LAYERS if k != "cgroup"))
    path = next(p for p in HOSTILE if p.stem == "transformer_sdpa_in_a_pool_started_at_import")
    graded = grade(assemble(path, read_entry(path), tmp_path / "sub"), stages={7}, timeout_s=3)
    assert not any(r.passed for r in graded.results)
    assert all("thread" in r.feedback for r in graded.results), [r.feedback for r in graded.results]


def test_while_the_kit_answers_the_students_child_is_stopped(root, monkeypatch):
    """Every request of the race to the kit's own child is made while every child of the student's is
    stopped, every thread of it, as ``/proc`` shows (the one beside it, which runs the other checks, too);
    and the kit's child is given no submission at all."""
    children, seen = [], []
    made, asked = runner._Child.__init__, runner._Child.ask

    def making(self, *args, **kwargs):
        made(self, *args, **kwargs)
        children.append(self)

    def asking(self, task, *args, **kwargs):
        if self.kit:
            # Every child of the student's alive: the one that races, and, where the race runs beside the rest,
            # the one that runs the other checks.
            students = [c for c in children if not c.kit and c.proc is not None and c.proc.returncode is None]
            job = json.loads((self.ws.control / f"{self.out.name}.json").read_text())
            seen.append((task.name, [runner._all_stopped(c.proc.pid) for c in students],
                         job["submission"] == str(self.ws.empty) and not os.listdir(self.ws.empty)))
        return asked(self, task, *args, **kwargs)

    # The grading's own decision whether the race runs beside the rest, not one asked apart: it rests on the
    # memory available at the moment, which a busy machine changes between two asks.
    decided, room_beside = [], runner.room_beside
    monkeypatch.setattr(runner._Child, "__init__", making)
    monkeypatch.setattr(runner._Child, "ask", asking)
    monkeypatch.setattr(runner, "room_beside", lambda server: decided.append(room_beside(server)) or decided[-1])
    from autograder.sandbox.forkserver import ForkServer

    with ForkServer() as server:
        graded = grade(root / "solutions", stages={8}, server=server)
    assert len(decided) == 1, decided
    beside = decided[0] is None
    assert all(r.passed for r in graded.results), [(r.id, r.feedback) for r in graded.results if not r.passed]
    assert {name for name, _, _ in seen} == {"kit.fast.timed", "kit.fast.idle"}, seen
    assert all(stopped and all(stopped) for _, stopped, _ in seen), seen
    assert not beside or any(len(stopped) == 2 for _, stopped, _ in seen), "the child beside was not stopped"
    assert all(empty for _, _, empty in seen), "the kit's child was given a submission to grade"


def test_a_timed_output_written_raw_reads_back_and_anything_else_is_refused():
    """A race's outputs come raw (``protocol.RAW_TENSOR``): a header and the bytes, read with a copy; a
    header that does not say a dtype of a float, a shape, or exactly the bytes that follow, is refused."""
    import torch

    from autograder.sandbox.child import _raw
    from autograder.sandbox.runner import load_result

    for t in (torch.randn(1, 64, 8), torch.zeros(0, 3), torch.tensor(2.5), torch.randn(3, 4).to(torch.bfloat16)):
        back = load_result(_raw(t), raw=True)
        assert type(back) is torch.Tensor and back.dtype == t.dtype and torch.equal(back, t)
    data = _raw(torch.randn(4, 4))
    for junk, says in ((data[:-1], "bytes where its shape says"), (data.replace(b"float32", b"int64\x20\x20"), "dtype"),
                       (data[:30], "without its header"), (data.replace(b"[4, 4]", b"[4, -4]"), "shape"),
                       (data.replace(b"[4, 4]", b"[4, 5]"), "bytes where its shape says"),
                       (data.replace(b"[4, 4]", b"{}"), "shape")):
        refused = load_result(junk, raw=True)
        assert "error" in refused and says in refused["error"]["message"], (junk[:80], refused)
    # Where the request was not timed, a raw tensor is no result: torch.save's zip is.
    assert "not a zip file of torch.save" in load_result(data)["error"]["message"]


def test_a_race_where_the_server_runs_one_child_at_a_time_is_the_graders_failure(root, monkeypatch):
    """The race takes two children at once (the student's and the kit's own): a fork server that cannot
    watch two (no pidfds: before Linux 5.3) stops the grading as the grader's failure, in a sentence,
    rather than wait for a second child that it would never start."""
    from autograder.errors import GradingError
    from autograder.sandbox.forkserver import ForkServer

    ready = ForkServer.start_now

    def one_at_a_time(self):
        ready(self)
        self.concurrent = False

    monkeypatch.setattr(ForkServer, "start_now", one_at_a_time)
    with ForkServer(beside=False) as server, pytest.raises(GradingError, match="runs one child at a time"):
        grade(root / "solutions", stages={8}, server=server)
