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
import queue
import sys
import threading
import time
from collections import Counter
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

from ...errors import GradingError, SubmissionError, UsageError
from ...grading.config import CourseConfig
from ...grading.grade import available_devices, grade
from ...grading.results import Record
from ...intake.files import is_folder, is_regular, walk
from ...intake.submission import holds_code
from ...common.limits import MAX_SUBMISSION_FILES
from ...paths import KIT_PACKAGE, runtime_files
from ...common.regular_files import NotRegular, read_regular
from ...sandbox.forkserver import ForkServer
from ...sandbox.runner import TASK_TIMEOUT_S, shortfall
from ..report import TEMPORARY, csv_cell, printable, write_atomically, write_json
from .progress import Progress
from .summary import failures, histogram, item_analysis, text_summary

SUFFIXES = (".zip", ".ipynb")
MAX_NAME_BYTES = 240  # a student's folder name, so that <name>.json and its temporary file fit in 255
FINGERPRINT_MAX_FILES = 10 * MAX_SUBMISSION_FILES
FINGERPRINT_MAX_BYTES = 64 * 2**20  # a file past this is fingerprinted as too large, and refused by intake anyway


@dataclass(frozen=True)
class Entry:
    student: str
    path: Path


@dataclass
class Outcome:
    entry: Entry
    record: Record | None  # None: the grader failed (not the student's fault); graded again next run
    problem: str = ""
    grader_errors: list = field(default_factory=list)  # (check id, device, traceback) of a record to regrade


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


@lru_cache(maxsize=1)
def kit_fingerprint() -> str:
    """sha256 of the grader itself (its code and golden data): a record from another kit is stale."""
    digest = hashlib.sha256()
    for p in runtime_files():
        digest.update(str(p.relative_to(KIT_PACKAGE)).encode() + b"\0" + p.read_bytes() + b"\0")
    return digest.hexdigest()


# ---------------------------------------------------------------- one student


def grade_one(entry, key, server, timeout_s, config):
    """An Outcome for ``entry``; never raises for the student's sake."""
    bookkeeping = {"student": entry.student, "source": entry.path.name, **key}
    try:
        # pictures: a failed check's record carries them, for nbgrader import's feedback
        graded = grade(entry.path, stages=set(key["stages"]), devices=key["devices"], timeout_s=timeout_s,
                       server=server, config=config, pictures="failed")
    except SubmissionError as exc:
        record = Record.not_graded(f"Not graded: {exc.student}", exc.student, key["stages"], bookkeeping, config)
        return Outcome(entry, record, str(exc))  # the record is the student's; the detail is for the log
    except GradingError as exc:
        return Outcome(entry, None, f"grading failed, not the submission's fault: {exc}")
    record = Record.of(graded, bookkeeping)
    return Outcome(entry, record, record.problem, graded.grader_errors)


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
              config=None, entries=None):
    """Grade every student in ``folder`` (or the ``entries`` given); returns the number of students
    the grader failed on, in whole or in some checks (0: all done). ``stages`` default to those the
    course teaches (``config``)."""
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
    try:
        for stale in [*json_dir.glob(TEMPORARY + "*"), *out.parent.glob(TEMPORARY + out.stem + "*")]:
            stale.unlink(missing_ok=True)  # left by a run killed while writing
        key = {"kit": kit_fingerprint(), "stages": stages, "devices": sorted(available_devices()),
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
        workers = min(jobs, len(todo) or 1)
        log(f"{len(entries)} submissions in {folder}: {len(records)} already graded, {len(todo)} to grade "
            f"with {workers} worker{'s' * (workers != 1)}" + (f" (records in {json_dir})" if records else ""))
        failed = {}
        write_atomically(out, csv_text(entries, records, stages, failed, config))
        if todo:
            failed = _run(todo, entries, records, stages, out, json_dir, jobs, timeout_s, config)
        _summarise(entries, records, stages, failed, out, config, log)
        return len(failed) + sum(bool(r.regrade) for r in records.values())
    finally:
        os.close(lock)


# Past the runner's own bound on a grading (worst_case_s), this much more is the grader's: intake,
# judging, pictures. A grading still not done then is the student's "took too long", and the class goes on.
GRADER_MARGIN_S = 120.0


def grading_limit_s(stages, devices, timeout_s, config) -> float:
    """How long one student's grading may take before grade-all stops waiting for it."""
    from ...grading.grade import worst_case

    return worst_case(config.checks(stages), set(devices), timeout_s or TASK_TIMEOUT_S) + GRADER_MARGIN_S


def _run(todo, entries, records, stages, out, json_dir, jobs, timeout_s, config):
    """Grade ``todo`` ((entry, key) pairs) with ``jobs`` workers; this thread alone writes files, and
    never waits on a grading past ``grading_limit_s``: that student's row says so, and a worker stuck
    in it is left behind (it holds only its own fork server, which dies with grade-all)."""
    jobs = min(jobs, len(todo))
    limit = grading_limit_s(stages, todo[0][1]["devices"], timeout_s, config)
    threads = config.threads  # torch threads per child: one unless the course asks for more
    work, done = queue.Queue(), queue.Queue()
    for item in todo:
        work.put(item)
    meta = "meta" in todo[0][1]["devices"]
    workers = [threading.Thread(target=_worker, args=(work, done, meta, timeout_s, threads, config), daemon=True)
               for _ in range(jobs)]
    for t in workers:
        work.put(None)
        t.start()
    failed = {}
    progress = Progress(len(entries), done=len(entries) - len(todo))
    started, finished, gave_up = {}, set(), set()  # when a worker took a student; whose outcome is counted; given up
    while len(finished) < len(todo):
        try:
            outcome = done.get(timeout=1.0)
        except queue.Empty:
            now = time.monotonic()
            for late in [s for s, t in started.items() if s not in finished and now - t > limit]:
                finished.add(late)
                gave_up.add(late)
                failed[late] = (f"took too long: its grading ran past {limit:.0f} s, the most all its checks "
                                "may take together, and was stopped")
                progress.say(f"{printable(late)}: {failed[late]}")
                write_atomically(out, csv_text(entries, records, stages, failed, config))
                progress.advance(f"{printable(late)} took too long")
            continue
        if isinstance(outcome, tuple):  # ("started", student): a worker took it now
            started[outcome[1]] = time.monotonic()
            continue
        if outcome.entry.student in finished:  # it came back after it was given up on: the row stands
            continue
        finished.add(outcome.entry.student)
        student = printable(outcome.entry.student)  # as the terminal shows it
        for check_id, device, trace in outcome.grader_errors:  # for the instructor, never in a record
            progress.say(f"{student}: grader error in {check_id} on {device} (a bug of the kit):\n{trace}")
        if outcome.problem:  # the detail, for the instructor (a record holds what the student may read)
            progress.say(f"{student}: {printable(outcome.problem)}")
        if outcome.record is None:
            failed[outcome.entry.student] = outcome.problem
        else:  # the record first: it is what is done
            write_json(outcome.record.data, json_dir / f"{outcome.entry.student}.json")
            records[outcome.entry.student] = outcome.record
        write_atomically(out, csv_text(entries, records, stages, failed, config))
        progress.advance(f"{student} {outcome.record.score}" if outcome.record else f"{student} failed")
    if not gave_up:  # else a worker may be stuck in the grading given up on: it is a daemon, left behind
        for t in workers:
            t.join()
    return failed


def _worker(work, done, meta, timeout_s, threads, config):
    """One grading at a time, in children of this thread's own fork server (which dies with the
    thread: the server is started here, and the kernel ties it to the thread that started it)."""
    try:
        server, why = ForkServer(meta=meta, threads=threads, beside=False), ""  # the workers share the cores
    except GradingError as exc:  # no grading user free: every entry this worker takes says so
        server, why = None, f"grading failed, not the submission's fault: {exc}"
    try:
        while (item := work.get()) is not None:
            entry, key = item
            done.put(("started", entry.student))
            try:
                done.put(grade_one(entry, key, server, timeout_s, config) if server else Outcome(entry, None, why))
            except BaseException as exc:  # the grader's own bug: report it, keep the others going
                done.put(Outcome(entry, None, f"grading failed, not the submission's fault: {exc!r}"))
    finally:
        if server is not None:
            server.close()


def summary_files(out: Path) -> list[Path]:
    """What is written beside the CSV: the summary as text, the score histogram, the checks most failed."""
    return [out.with_suffix(".txt"), out.with_suffix(".svg"), out.with_name(out.stem + "-checks.svg")]


def _summarise(entries, records, stages, failed, out, config, log):
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
                        items=items, flagged=flagged, isolation=isolation)
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
