"""``attention-lab grade-all``: grade a whole class, resumably.

``SUBMISSIONS_DIR`` holds one entry per student: a folder, a zip or a notebook (nbgrader's
``submitted/`` works as it is: each student's folder holds one assignment folder). The student
is the entry's name less ``.zip`` / ``.ipynb``.

What is done is what is on disk. Each graded student gets ``<json-dir>/<student>.json``
(Gradescope's results.json, with the kit's bookkeeping in ``extra_data``), written atomically;
the class CSV is then rewritten atomically from those records. A run killed at any moment, by
``kill -9`` too, leaves whole records and a valid CSV; the next run reuses every record whose
fingerprints match (the student's files, the kit, the stages, given stages, devices and timeout
graded) and grades the rest. A submission that changed since is graded again.

Speed: ``--jobs`` worker threads, each with a ``ForkServer`` that imported torch once, so a
student costs a fork and the checks themselves (about 0.3 s for stages 1-5 here), not a fresh
Python. Isolation is that of ``attention-lab grade``: every child is confined, and a hanging or
hostile submission costs its own timeouts and nothing else.
"""
from __future__ import annotations

import csv
import fcntl
import hashlib
import io
import os
import sys
import time
from collections import Counter
from concurrent.futures import FIRST_COMPLETED, wait
from dataclasses import dataclass, replace
from pathlib import Path

from ...errors import GradingError, SubmissionError, UsageError
from ...grading.config import CourseConfig
from ...grading.results import Record
from ...intake.files import is_folder, is_regular, walk
from ...intake.submission import holds_code, read
from ...common.limits import MAX_SUBMISSION_FILES
from ...common.regular_files import NotRegular, read_regular
from ...sandbox.runner import TASK_TIMEOUT_S, shortfall
from ..report import TEMPORARY, csv_cell, printable, write_atomically, write_json
from .pools import open_pool
from .progress import Progress
from .summary import failures, histogram, item_analysis, text_summary
from .worker import NOT_THEIR_FAULT, Done, Job, grade_job, kit_fingerprint, not_graded

SUFFIXES = (".zip", ".ipynb")
MAX_NAME_BYTES = 240  # a student's folder name, so that <name>.json and its temporary file fit in 255
FINGERPRINT_MAX_FILES = 10 * MAX_SUBMISSION_FILES
FINGERPRINT_MAX_BYTES = 64 * 2**20  # a file past this is fingerprinted as too large, and refused by intake anyway


@dataclass(frozen=True)
class Entry:
    student: str
    path: Path


# ---------------------------------------------------------------- what there is to grade


def discover(folder: Path, skip=()):
    """(entries sorted by student, names left out). Raises UsageError when ``folder`` is no class."""
    if not folder.is_dir():
        raise UsageError(f"{folder}: not a folder of submissions")
    if holds_code(folder):
        raise UsageError(f"{folder} looks like one submission; grade-all wants a folder with one entry per "
                         "student (use `attention-lab grade` for one)")
    skip = {p.resolve() for p in skip}
    entries: list[Entry] = []
    ignored: list[str] = []
    seen: dict[str, Path] = {}
    for path in sorted(folder.iterdir()):
        if path.name.startswith(".") or path.resolve() in skip:
            continue
        if len(os.fsencode(path.name)) > MAX_NAME_BYTES:  # its record, <name>.json, could not be written
            ignored.append(f"{path.name[:40]}... (a name longer than {MAX_NAME_BYTES} bytes)")
        elif path.is_symlink():  # never followed: it could name anything on the grading machine
            ignored.append(f"{path.name} (a symbolic link)")
        elif is_folder(path) or (is_regular(path) and path.suffix.lower() in SUFFIXES):
            student = path.name if is_folder(path) else path.stem
            if student in seen:
                raise UsageError(f"two entries for {student}: {seen[student].name} and {path.name}; keep one")
            seen[student] = path
            entries.append(Entry(student, path))
        else:
            ignored.append(path.name)
    if not entries:
        raise UsageError(f"{folder} holds no submission (a folder, .zip or .ipynb per student)")
    return entries, ignored


def fingerprint(path: Path) -> str:
    """sha256 of a submission as intake would read it: the names and contents of its regular files,
    reached without following a link, within intake's limits of depth and size (a tree 1,100 folders
    deep, or a FIFO named like a notebook, is a fingerprint like any other, never a crash or a hang)."""
    digest = hashlib.sha256()
    if not is_folder(path):
        digest.update(_contents(path, None))
        return digest.hexdigest()
    left_out: dict = {}
    try:
        for count, (fd, name, entry) in enumerate(walk(path, left_out)):
            if count >= FINGERPRINT_MAX_FILES:  # far past what intake reads: the rest cannot change a grade
                digest.update(b"more files")
                break
            digest.update(os.fsencode(name) + b"\0" + _contents(entry.name, fd) + b"\0")
    except SubmissionError:  # unreadable: graded (and refused) like any other; its fingerprint says so
        digest.update(b"unreadable folder")
    for name, what in sorted(left_out.items()):
        digest.update(os.fsencode(name) + b"\0" + what.encode() + b"\0")
    return digest.hexdigest()


def _contents(name, dir_fd) -> bytes:
    try:
        return read_regular(name, FINGERPRINT_MAX_BYTES, dir_fd=dir_fd)
    except NotRegular as exc:
        return f"not read: {exc}".encode()


# ---------------------------------------------------------------- the class


def csv_text(entries, records, stages, failed, config=None):
    """The class CSV: one row per student, in name order; a student the grader failed on has
    empty points and the reason, so that no row silently goes missing."""
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(["student", "total", "out_of", *[f"stage{s}" for s in stages], "problem"])
    out_of = sum((config or CourseConfig()).max_points(s) for s in stages)
    for e in entries:  # names and problems are the students' text: csv_cell makes them inert
        if e.student in records:
            points = list(records[e.student].points(stages).values())
            writer.writerow(map(csv_cell, [e.student, sum(points), out_of, *points, records[e.student].problem]))
        elif e.student in failed:
            writer.writerow(map(csv_cell, [e.student, "", out_of, *[""] * len(stages), failed[e.student]]))
    return out.getvalue()


def grade_all(folder, out, json_dir=None, jobs=None, stages=None, timeout_s=None, log=None, keep_records=False,
              config=None, entries=None, executor="local", unconfined=False, run_job=grade_job):
    """Grade every student in ``folder`` (or the ``entries`` given); returns the number of students
    the grader failed on, in whole or in some checks (0: all done). ``stages`` default to those the
    course teaches (``config``). ``executor``: where the gradings run (``pools.open_pool``: ``local``,
    or ``dask://HOST:PORT``); ``unconfined``: a worker of a cluster that cannot confine graded code may
    grade. ``run_job``: what a worker runs for each student (``worker.grade_job``; the fault tests wrap it)."""
    config = config or CourseConfig()
    folder, out = Path(folder).expanduser().resolve(), Path(out).expanduser().resolve()
    json_dir = Path(json_dir).expanduser().resolve() if json_dir else out.with_name(out.stem + "-results")
    stages = sorted(stages or config.stages)
    jobs = jobs or min(len(os.sched_getaffinity(0)), 8)  # the CPUs this process may use (taskset, a cpuset)
    ignored = []
    if entries is None:
        entries, ignored = discover(folder, skip=[out, json_dir, *summary_files(out)])
    log = log or (lambda text: print(text, file=sys.stderr, flush=True))

    json_dir.mkdir(parents=True, exist_ok=True)
    lock = os.open(json_dir / ".lock", os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(lock)
        raise UsageError(f"another grade-all is writing to {json_dir}; wait for it, or pass another --json-dir")
    pool = None
    try:
        for stale in [*json_dir.glob(TEMPORARY + "*"), *out.parent.glob(TEMPORARY + out.stem + "*")]:
            stale.unlink(missing_ok=True)  # left by a run killed while writing
        pool = open_pool(executor, jobs, unconfined, log)  # a cluster's devices decide what is graded
        key = {"kit": kit_fingerprint(), "stages": stages, "devices": sorted(pool.devices),
               "timeout": timeout_s or TASK_TIMEOUT_S,  # a hang's cost depends on it
               "points": config.points,  # the course's points, where they differ from the registry's
               "given": list(config.given)}  # stages graded with the kit's own code of a stage they build on
        records, todo = {}, []
        for e in entries:
            record = Record.load(json_dir / f"{e.student}.json")
            key_e = {**key, "fingerprint": fingerprint(e.path)}
            if record is not None and record.reusable(key_e, keep_records):
                records[e.student] = record
            else:
                todo.append((e, key_e))
        if ignored:
            log(f"left out (not a folder, .zip or .ipynb): {', '.join(map(printable, ignored))}")
        if pool.kind == "local":  # a thread for each student at most
            pool.slots = min(pool.slots, len(todo) or 1)
        log(f"{len(entries)} submissions in {folder}: {len(records)} already graded, {len(todo)} to grade "
            f"with {pool.describe()}" + (f" (records in {json_dir})" if records else ""))
        failed: dict[str, str] = {}
        graded_by: Counter = Counter()
        write_atomically(out, csv_text(entries, records, stages, failed, config))
        by = graded_by if pool.kind != "local" else None
        try:
            if todo:
                _run(todo, entries, records, stages, out, json_dir, pool, Sent(timeout_s, config, unconfined, run_job),
                     failed, graded_by)
        except PoolLost:  # what was graded is summed up as well
            _summarise(entries, records, stages, failed, out, config, log, by)
            raise
        _summarise(entries, records, stages, failed, out, config, log, by)
        return len(failed) + sum(bool(r.regrade) for r in records.values())
    finally:
        if pool is not None:  # the local pool's threads close their fork servers, unless one is stuck
            pool.shutdown()
        os.close(lock)


@dataclass(frozen=True)
class Sent:
    """What every job of a run carries besides its student, and what runs it."""
    timeout_s: float | None
    config: CourseConfig
    unconfined: bool
    run_job: object


class PoolLost(GradingError):
    """The pool itself is gone (a cluster's scheduler out of reach): the run stops, what was graded saved."""


# The CSV is rewritten whole, from the records: at most this often while a class is graded (and at its end),
# so that a class of 50,000 does not spend its driver's time rewriting a CSV of 50,000 rows per student
# (docs/benchmarks.md, "A class on a cluster"). The records, written first, are what is done.
CSV_EVERY_S = 1.0

# Past the runner's own bound on a grading (worst_case_s), this much more is the grader's: intake,
# judging, pictures. A grading still not done then is the student's "took too long", and the class goes on.
GRADER_MARGIN_S = 120.0


def grading_limit_s(stages, devices, timeout_s, config) -> float:
    """How long one student's grading may take before grade-all stops waiting for it."""
    from ...grading.grade import worst_case

    return worst_case(config.checks(stages), set(devices), timeout_s or TASK_TIMEOUT_S) + GRADER_MARGIN_S


def _run(todo, entries, records, stages, out, json_dir, pool, sent, failed, graded_by):
    """Grade ``todo`` ((entry, key) pairs) on ``pool``, never more at once than it runs (``pool.slots``),
    so that a job starts when it is sent. This thread alone writes files, and never waits on a grading
    past ``grading_limit_s``: that student's row says so, and the worker stuck in it is left behind (it
    holds only its own fork server) with one slot fewer. ``failed`` and ``graded_by`` are filled in."""
    limit = grading_limit_s(stages, todo[0][1]["devices"], sent.timeout_s, sent.config)
    progress = Progress(len(entries), done=len(entries) - len(todo))
    waiting, in_flight = iter(todo), {}  # in flight: future -> (entry, when it was sent)
    written = [time.monotonic()]  # when the CSV was last written

    def write_csv():
        write_atomically(out, csv_text(entries, records, stages, failed, sent.config))
        written[0] = time.monotonic()

    def settle(done, entry):
        """``done``, the worker's answer for ``entry``: keyed on the entry the driver sent, never on what came
        back (a record for another student is the grader's failure, not a row)."""
        if done.student != entry.student or (done.record is not None and not _answers(done.record, entry)):
            done = Done(entry.student, None, f"{NOT_THEIR_FAULT}: its worker answered for another job",
                        worker=done.worker)
        student = printable(done.student)  # as the terminal shows it
        for check_id, device, trace in done.grader_errors:  # for the instructor, never in a record
            progress.say(f"{student}: grader error in {check_id} on {device} (a bug of the kit):\n{trace}")
        problem = (f"not graded: the worker {done.worker} may not grade this class: {done.refused}" if done.refused
                   else done.problem)
        if problem:  # the detail, for the instructor (a record holds what the student may read)
            progress.say(f"{student}: {printable(problem)}")
        if done.record is None:
            failed[done.student] = problem
        else:  # the record first: it is what is done
            record = Record(done.record)
            write_json(record.data, json_dir / f"{done.student}.json")
            records[done.student] = record
            failed.pop(done.student, None)
            if record.extra.get("isolation"):  # a grading ran (not intake's refusal, which runs nothing)
                graded_by[done.worker, shortfall(record.extra["isolation"]) or ""] += 1
        if time.monotonic() - written[0] >= CSV_EVERY_S:
            write_csv()
        progress.advance(f"{student} {records[done.student].score}" if done.record else f"{student} failed")

    def send(slots):
        while len(in_flight) < slots and (item := next(waiting, None)) is not None:
            entry, key = item
            job = Job(entry.student, entry.path.name, entry.path, key, sent.timeout_s, sent.config,
                      None if pool.kind == "local" else key["kit"], sent.unconfined)
            if pool.kind != "local":  # a worker elsewhere gets what intake read, not a path of this machine
                try:
                    job = replace(job, source=read(entry.path))
                except SubmissionError as exc:
                    settle(not_graded(job, exc, "the driver"), entry)
                    continue
                except Exception as exc:  # intake's own failure on this submission: its row, not the class
                    settle(Done(entry.student, None, f"{NOT_THEIR_FAULT}: {exc!r}", worker="the driver"), entry)
                    continue
            in_flight[pool.submit(sent.run_job, job)] = (entry, time.monotonic())

    try:
        _drive(pool, send, settle, in_flight, limit, records, entries)
    finally:  # the last rows, and those of a run that stops: whatever is graded is in the CSV
        write_csv()


def _drive(pool, send, settle, in_flight, limit, records, entries):
    """Send, wait and settle until nothing is in flight (see ``_run``)."""
    stuck = 0  # workers left in a grading given up on: a slot each, until the pool replaces them
    send(pool.slots)
    while in_flight:
        finished, _ = wait(in_flight, timeout=1.0, return_when=FIRST_COMPLETED)
        lost = None
        for future in finished:
            entry, _ = in_flight.pop(future)
            try:
                done = future.result()
            except pool.student_faults as exc:  # a worker died grading it, as many times as the pool allows
                done = Done(entry.student, None, f"{NOT_THEIR_FAULT}: the worker grading it died each time it was "
                            f"tried ({type(exc).__name__}); it is left for the next run")
            except BaseException as exc:
                if not pool.reachable(at_once=True):
                    lost = lost or exc  # the pool itself: the others of this batch are settled first
                    continue
                done = Done(entry.student, None, f"{NOT_THEIR_FAULT}: {exc!r}")  # this job alone
            settle(done, entry)
        if lost is not None or not pool.reachable():
            raise PoolLost(f"{pool.lost()}, after {len(records)} of {len(entries)} were graded; what was graded is "
                           "saved: run the same command again to finish (with --executor local, or once it is back)")
        now = time.monotonic()
        for future, (entry, since) in list(in_flight.items()):
            if now - since > limit:
                del in_flight[future]
                future.cancel()
                stuck += pool.replace_stuck()
                settle(Done(entry.student, None, f"took too long: its grading ran past {limit:.0f} s, the most all "
                            "its checks may take together, and was stopped"), entry)
        send(max(1, pool.slots - stuck))


def summary_files(out: Path) -> list[Path]:
    """What is written beside the CSV: the summary as text, the score histogram, the checks most failed."""
    return [out.with_suffix(".txt"), out.with_suffix(".svg"), out.with_name(out.stem + "-checks.svg")]


def _answers(data, entry) -> bool:
    """Is the record a worker returned the record of ``entry``: its student, from its file?"""
    extra = data.get("extra_data") if isinstance(data, dict) else None
    return isinstance(extra, dict) and extra.get("student") == entry.student and extra.get("source") == entry.path.name


def _summarise(entries, records, stages, failed, out, config, log, graded_by=None):
    summary_path, picture, checks_picture = summary_files(out)
    out_of = sum(config.max_points(s) for s in stages)
    points = {e.student: records[e.student].points(stages) for e in entries if e.student in records}
    rows = [(student, sum(p.values()), p) for student, p in points.items()]
    regrade = [student for student in points if records[student].regrade]
    items = item_analysis([records[student] for student in points], config.checks(stages))
    flagged = [(printable(s), found) for s in points if (found := records[s].extra.get("flagged_for_review"))]
    isolation = Counter(shortfall(held) for s in points if (held := records[s].extra.get("isolation")))
    text = text_summary(rows, out_of, {s: config.max_points(s) for s in stages},
                        problems=[printable(s) for s in sorted(failed)], regrade=[printable(s) for s in regrade],
                        items=items, flagged=flagged, isolation=isolation, workers=graded_by)
    write_atomically(summary_path, text)
    drawn, not_drawn, title = [], [], f"{len(rows)} students, stages {', '.join(map(str, stages))}"
    for path, drawn_or_why in ((picture, histogram([total for _, total, _ in rows], out_of, title)),
                               (checks_picture, failures(items, len(rows)))):
        if isinstance(drawn_or_why, str):
            path.unlink(missing_ok=True)  # an earlier run's picture would no longer be this class's
            not_drawn.append(f"{path.name}: {drawn_or_why}")
        else:
            write_atomically(path, drawn_or_why.svg)  # as private as the grades it draws
            drawn.append(str(path))
    print(text, end="")
    log(f"wrote {out}, {summary_path}" + "".join(f", {p}" for p in drawn)
        + (f" (not drawn: {'; '.join(not_drawn)})" if not_drawn else ""))
