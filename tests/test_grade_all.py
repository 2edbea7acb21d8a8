"""``attention-lab grade-all``: a class graded in one go equals one killed with ``kill -9`` and resumed."""
import csv
import json
from xml.etree import ElementTree
import os
import shutil
import signal
import subprocess
import sys
import time
import zipfile

import pytest

from autograder.delivery.classrun import grade_all as grade_all_module
from autograder.delivery.classrun import worker as worker_module
from autograder.delivery.classrun.grade_all import csv_text, discover, grade_all
from autograder.delivery.classrun.progress import Progress
from autograder.delivery.classrun.summary import bins, charted, failures, histogram, item_analysis, text_summary
from autograder.errors import GradingError, UsageError
from autograder.grading.registry import max_points
from autograder.sandbox.linux import proc_stat
from tests.forked import ForkedPython

STAGES = [1, 3]  # enough to tell right from wrong, quick to grade
SLOW = "import time\ntime.sleep(0.6)  # a slow import: the kill lands while the class is being graded\n"
HANG = "while True:\n    pass\n"


@pytest.fixture
def klass(tmp_path, root):
    """A class of nine: right, wrong, partly right, slow, hanging, zipped, a notebook folder, an
    empty folder and a stray file."""
    solutions, stubs = root / "solutions" / "attention_lab", root / "assignments" / "attention_lab"
    folder = tmp_path / "submitted"

    def student(name, package=solutions, **edits):
        pkg = folder / name / "attention_lab"
        shutil.copytree(package, pkg)
        for module, text in edits.items():
            (pkg / f"{module}.py").write_text(text)
        return pkg.parent

    student("ada")
    student("bob", package=stubs)
    student("cy", causal=(stubs / "causal.py").read_text())  # stage 1 right, stage 3 not done
    for name in ("dee", "eve", "fay"):
        student(name, simple=SLOW + (solutions / "simple.py").read_text())
    student("gus", causal=HANG)
    zipped = student("hal")
    with zipfile.ZipFile(folder / "hal.zip", "w") as z:  # hal hands in a zip instead
        for path in sorted(zipped.rglob("*.py")):
            z.write(path, "hal-final/" + str(path.relative_to(zipped)))
    shutil.rmtree(zipped)
    (folder / "ivy" / "attention").mkdir(parents=True)  # nbgrader's submitted/<student>/<assignment>/, empty
    (folder / "README.txt").write_text("not a submission")
    return folder


def arguments(folder, out, *extra):
    """``attention-lab``'s arguments for grading ``folder`` into ``out``."""
    stage_args = [a for s in STAGES for a in ("--stage", str(s))]
    return ["grade-all", str(folder), "--out", str(out), "--timeout", "3", *stage_args, *extra]


def command(folder, out, *extra):
    return [sys.executable, "-m", "autograder.cli", *arguments(folder, out, *extra)]


def run(folder, out, *extra):
    """The command, forked from a process that has imported torch (tests/forked.py): what grade-all does is
    the point here; ``kill_after`` starts it afresh, to kill it as a process of its own."""
    argv = arguments(folder, out, *extra)
    done = ForkedPython(f"import sys\nfrom autograder.cli import main\nsys.exit(main({argv!r}))", cwd=os.getcwd(),
                        env=dict(os.environ))
    code, stdout = done.result(timeout=600)
    return code, stdout, done.stderr


def records(out):
    return sorted(p.name for p in out.with_name(out.stem + "-results").glob("*.json"))


def children_of(pid):
    return [int(p) for p in os.listdir("/proc") if p.isdigit() and (proc_stat(p) or [0, 0])[1] == str(pid).encode()]


def kill_after(folder, out, n_records):
    """Start grade-all, kill -9 it once ``n_records`` students are recorded; returns the fork
    servers it had started (they must die with it)."""
    proc = subprocess.Popen(command(folder, out, "--jobs", "1"), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 120
    while len(records(out)) < n_records:
        assert proc.poll() is None, f"finished before the kill: {proc.stderr.read().decode()}"
        assert time.monotonic() < deadline
        time.sleep(0.01)
    servers = children_of(proc.pid)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    proc.stderr.close()
    return servers


def rows(path):
    with open(path, newline="") as f:
        return list(csv.reader(f))


def test_a_class_killed_twice_and_resumed_gives_the_csv_of_one_uninterrupted_run(klass, tmp_path):
    straight = tmp_path / "straight" / "grades.csv"
    code, stdout, stderr = run(klass, straight)
    assert code == 0, stderr
    expected = rows(straight)
    by_name = {r[0]: r for r in expected[1:]}
    assert expected[0] == ["student", "total", "out_of", "stage1", "stage3", "problem"]
    assert list(by_name) == ["ada", "bob", "cy", "dee", "eve", "fay", "gus", "hal", "ivy"]  # README.txt left out
    full = sum(max_points(s) for s in STAGES)
    assert by_name["ada"][1:5] == [str(full), str(full), str(max_points(1)), str(max_points(3))]
    assert by_name["hal"][1] == by_name["dee"][1] == str(full)
    assert by_name["bob"][1] == "0" and by_name["cy"][1:5] == [str(max_points(1)), str(full), str(max_points(1)), "0"]
    assert by_name["gus"][3:5] == [str(max_points(1)), "0"]  # the hang costs stage 3 only
    gus = json.loads((straight.parent / "grades-results" / "gus.json").read_text())
    assert any("timed out after 3 s" in t["output"] for t in gus["tests"]), gus
    assert by_name["ivy"][1] == "0" and "no attention_lab/ folder" in by_name["ivy"][-1]
    assert "left out (not a folder, .zip or .ipynb): README.txt" in stderr
    assert "9 students graded" in stdout
    assert (straight.parent / "grades.txt").read_text() == stdout
    for picture in ("grades.svg", "grades-checks.svg"):  # well-formed SVG, as a browser parses it
        assert ElementTree.parse(straight.parent / picture).getroot().tag == "{http://www.w3.org/2000/svg}svg"
    assert "s3.causal.no_leak" in (straight.parent / "grades-checks.svg").read_text()
    written = [*straight.parent.glob("grades*.*"), *(straight.parent / "grades-results").glob("*.json")]
    assert len(written) == 4 + 9 and {p.stat().st_mode & 0o777 for p in written} == {0o600}  # as the docs say
    # gus's hang is the one failure among the six who wrote stage 3; bob and cy never wrote it
    hung = [line for line in stdout.splitlines() if line.startswith("s3.causal.no_leak ")]
    assert hung and "1/6" in hung[0] and "timed out after 3 s" in hung[0] and "[2 not tried]" in hung[0], stdout

    resumed = tmp_path / "resumed" / "grades.csv"
    for n_records in (2, 5):
        servers = kill_after(klass, resumed, n_records)
        assert servers, "grade-all had started no fork server"
        deadline = time.monotonic() + 10
        while any((proc_stat(pid) or [b"Z"])[0] != b"Z" for pid in servers):  # gone, or a zombie
            assert time.monotonic() < deadline, "a fork server outlived the grader killed with kill -9"
            time.sleep(0.05)
        partial = rows(resumed)
        assert partial[0] == expected[0]
        assert all(row in expected for row in partial[1:]), "a row of the killed run differs or is half written"
        # The record is written first, then the CSV: a kill between the two leaves the CSV one behind.
        assert n_records - 1 <= len(partial) - 1 <= len(records(resumed))

    done_before = {name: (resumed.parent / "grades-results" / name).stat().st_mtime_ns for name in records(resumed)}
    code, stdout, stderr = run(klass, resumed)
    assert code == 0, stderr
    assert f"{len(done_before)} already graded, {9 - len(done_before)} to grade" in stderr
    assert rows(resumed) == expected and resumed.read_bytes() == straight.read_bytes()
    for name, mtime in done_before.items():  # not graded again
        assert (resumed.parent / "grades-results" / name).stat().st_mtime_ns == mtime, name
    assert not [p for p in resumed.parent.rglob(".tmp-*")], "a temporary file was left behind"

    # Nothing left to do; then a student hands in again and only that student is graded again.
    code, _, stderr = run(klass, resumed)
    assert code == 0 and "9 already graded, 0 to grade" in stderr, stderr
    shutil.copy(klass / "ada" / "attention_lab" / "causal.py",
                klass / "cy" / "attention_lab" / "causal.py")
    code, _, stderr = run(klass, resumed)
    assert code == 0 and "8 already graded, 1 to grade" in stderr, stderr
    assert {r[0]: r for r in rows(resumed)}["cy"][1] == str(full)


def test_a_grader_failure_keeps_the_row_says_why_and_is_retried(klass, tmp_path, monkeypatch):
    real = worker_module.grade

    def flaky(path, **kwargs):
        if path.name == "bob":
            raise GradingError("the fork server did not start")
        return real(path, **kwargs)

    out = tmp_path / "grades.csv"
    monkeypatch.setattr(worker_module, "grade", flaky)
    assert grade_all(klass, out, stages=STAGES, timeout_s=3, log=lambda _: None) == 1
    bob = {r[0]: r for r in rows(out)}["bob"]
    assert bob[1:2] == [""] and "grading failed, not the submission's fault" in bob[-1]
    assert "bob.json" not in records(out)
    monkeypatch.setattr(worker_module, "grade", real)
    messages = []
    assert grade_all(klass, out, stages=STAGES, timeout_s=3, log=messages.append) == 0
    assert "8 already graded, 1 to grade" in messages[-2]
    assert {r[0]: r for r in rows(out)}["bob"][1] == "0"


def test_what_is_not_a_class_is_refused_by_name(tmp_path, root):
    with pytest.raises(UsageError, match="looks like one submission"):
        discover(root / "solutions")
    with pytest.raises(UsageError, match="holds no submission"):
        discover(tmp_path)
    (tmp_path / "ann").mkdir()
    (tmp_path / "ann.zip").write_bytes(b"")
    with pytest.raises(UsageError, match="two entries for ann"):
        discover(tmp_path)


def test_a_second_grade_all_on_the_same_records_is_refused(klass, tmp_path):
    import fcntl

    out = tmp_path / "grades.csv"
    (tmp_path / "grades-results").mkdir()
    fd = os.open(tmp_path / "grades-results" / ".lock", os.O_RDWR | os.O_CREAT)
    fcntl.flock(fd, fcntl.LOCK_EX)
    try:
        code, _, stderr = run(klass, out)
    finally:
        os.close(fd)
    assert code == 2 and "another grade-all is writing to" in stderr, stderr


def test_the_csv_keeps_a_row_for_every_student_in_name_order():
    from autograder.delivery.classrun.grade_all import Entry
    from autograder.grading.results import Record

    entries = [Entry(n, None) for n in ("a", "b", "c")]
    recs = {"c": Record({"extra_data": {"stage_points": {"1": 11}, "problem": ""}})}
    text = csv_text(entries, recs, [1], {"a": "grading failed"})
    assert text == "student,total,out_of,stage1,problem\na,,11,,grading failed\nc,11,11,11,\n"


def test_the_summary_counts_every_score_once():
    counts, edges = bins([0, 5, 85, 86, 86], 86)
    assert sum(counts) == 5 and edges[0] == 0 and edges[-1] == 86 and counts[-1] == 3 and counts[0] == 2
    text = text_summary([("a", 86, {1: 11}), ("b", 0, {1: 0})], 86, {1: 11})
    assert "2 students graded, out of 86 points" in text and "full marks: 1   zero: 1" in text
    assert "1 attention without trainable weights" in text


def test_item_analysis_counts_failures_among_those_who_tried_and_names_the_commonest_feedback():
    from autograder.grading.registry import all_checks
    from autograder.grading.results import Record

    first, second = all_checks({1})[:2]

    def record(*tests):  # (check, status, output[, cause]): the cause in the test's extra_data, as the kit writes it
        return Record({"tests": [{"number": c.id, "status": s, "output": o, "extra_data": {"cause": cause[0]} if cause
                                  else {}} for c, s, o, *cause in tests]})

    wrong = "row 3 of your weights sums to 0.71\nmore detail"
    records = [record((first, "failed", wrong, "student"), (second, "passed", "")),
               record((first, "failed", wrong, "student"), (second, "failed", "off by 2", "student")),
               record((first, "failed", "a shape"), (second, "passed", "")),  # no cause (not graded at all): tried
               record((first, "failed", "not implemented yet: x (attention_lab/simple.py line 3)", "untouched"),
                      (second, "failed", "stage 1 (simple.py) was not handed in", "untouched")),
               # the cause decides, never the words: a student's own message that reads like a stub's is
               # theirs, and so is a failure with no cause at all
               record((second, "failed", "not implemented yet, says my own ValueError", "student")),
               record((first, "failed", "not implemented yet: x (attention_lab/simple.py line 3)"))]
    items = item_analysis(records, [second, first])
    assert [i.check for i in items] == [first, second]  # the most failed first
    top = items[0]
    assert (top.tried, top.failed, top.untried, top.said, top.said_count) == (4, 4, 1, wrong.splitlines()[0], 2)
    assert (items[1].tried, items[1].failed, items[1].untried) == (4, 2, 1)
    lines = text_summary([("a", 0, {1: 0})], 11, {1: 11}, items=items).splitlines()
    row = next(line for line in lines if line.startswith(first.id))
    assert "4/4" in row and "100%" in row and "[1 not tried]" in row
    assert "row 3 of your weights sums to 0.71  (x2)" in row
    assert not [line for line in lines if "more detail" in line]
    # The chart of failures draws a bar for a check someone failed, and none for one no one did.
    passed_by_all = item_analysis([record((second, "passed", ""))] * 3, [second])
    assert charted(items) == items and charted(passed_by_all) == [] and len(charted(items, most=1)) == 1
    chart = failures(items, 6)
    assert chart.svg.count("<rect") == 1 + 2 and f"{first.id} failed by 4 of 4" in chart.alt  # white, then a bar each
    assert failures(passed_by_all, 3) == "no student failed a check they tried"


def test_the_histogram_draws_a_bar_per_bin_with_its_count_and_says_it_in_words():
    totals = [0, 3, 3, 86, 86, 86, 40]
    picture = histogram(totals, 86, "7 students, stages 1")
    counts, edges = bins(totals, 86)
    assert picture.svg.count("<rect") == 1 + len(counts)  # the white ground, then one bar per bin
    assert ElementTree.fromstring(picture.svg).tag == "{http://www.w3.org/2000/svg}svg"
    assert "3 from 0 to 9" in picture.alt and "3 from 81 to 86" in picture.alt and "mean 43.4" in picture.alt
    hostile = histogram([1], 11, "<script>alert(1)</script> & co")  # a title is text, never markup
    assert "<script>" not in hostile.svg and "&lt;script&gt;" in hostile.svg
    assert "no student" in histogram([], 11, "nobody").alt


def test_progress_shows_count_rate_and_time_left():
    import io

    now = [100.0]
    stream = io.StringIO()
    progress = Progress(10, done=4, stream=stream, every_s=0, clock=lambda: now[0])
    now[0] += 2.0
    progress.advance("ann 86")
    progress.advance("bob 0")
    line = stream.getvalue().splitlines()[-1]
    assert " 6/10" in line and "1.0/s" in line and "0:04 left" in line and "bob 0" in line, line


def test_the_class_benchmark_runs_end_to_end(capsys):
    from tools.bench_class import main as bench

    bench(["--students", "4", "--jobs", "1"])
    out = capsys.readouterr().out
    assert "built 4 submissions" in out and "4 submissions in" in out and "(4 rows in the CSV)" in out, out


def test_the_default_workers_are_the_cpus_this_process_may_use(tmp_path, root, monkeypatch):
    """Under ``taskset -c 0`` (or a container's cpuset of one) the machine's other cores are not the
    grader's: one worker, where the CPU count would start two that take turns on one core."""
    for name in ("ann", "ben"):
        shutil.copytree(root / "assignments" / "attention_lab", tmp_path / "class" / name / "attention_lab")
    said = []
    monkeypatch.setattr(grade_all_module.os, "sched_getaffinity", lambda pid: {0})
    assert grade_all(tmp_path / "class", tmp_path / "grades.csv", stages=[1], log=said.append) == 0
    assert any("2 to grade with 1 worker" in line for line in said), said


def test_the_summary_ends_with_what_held_the_gradings(tmp_path, root, monkeypatch, capsys):
    """One short line where every grading was held by every layer the kit has; where one went without a
    layer (here the syscall filter, though the namespaces still held what it holds), a loud line naming it,
    with how many gradings, in the summary printed and the one written beside the CSV."""
    from autograder.sandbox import protocol

    for name, package in (("ann", "solutions"), ("ben", "assignments")):
        shutil.copytree(root / package / "attention_lab", tmp_path / "class" / name / "attention_lab")
    out = tmp_path / "grades.csv"
    assert grade_all(tmp_path / "class", out, stages=[1], log=lambda text: None) == 0
    assert capsys.readouterr().out.rstrip().endswith("isolation: every grading (2) held by every layer the kit has")
    monkeypatch.setattr(protocol, "KERNEL_LAYERS", tuple(x for x in protocol.KERNEL_LAYERS if x != "seccomp"))
    for record in (tmp_path / "grades-results").glob("*.json"):
        record.unlink()  # graded again, without the filter
    assert grade_all(tmp_path / "class", out, stages=[1], log=lambda text: None) == 0
    last = capsys.readouterr().out.rstrip().splitlines()[-1]
    assert last.startswith("isolation: WARNING (2 of 2 gradings): graded without seccomp (seccomp not tried): "
                           "network, processes, memory and ipc held by fewer layers"), last
    assert out.with_suffix(".txt").read_text().rstrip().endswith(last)


def test_the_summary_counts_each_way_the_gradings_fell_short():
    rows = [("a", 11, {1: 11}), ("b", 0, {1: 0}), ("c", 0, {1: 0})]
    said = "graded without cgroup (not tried): processes and memory held by fewer layers than the kit has"
    text = text_summary(rows, 11, {1: 11}, isolation={None: 1, said: 2})
    assert text.rstrip().splitlines()[-1] == f"isolation: WARNING (2 of 3 gradings): {said}"
    assert "isolation:" not in text_summary(rows, 11, {1: 11})  # nothing known of it: nothing said
