"""One student's grading, where a class's work runs: a thread of grade-all's own pool on this machine,
or a thread of a Dask worker on another (``pools``). Both run ``grade_job``: the same grading, the same
record, whatever runs it.

A worker is the kit's, not the student's: it grades as ``attention-lab grade`` does, in confined children
of a fork server of its own, and returns the record. It writes nothing of the class: the driver
(``grade_all``) is the only writer of records and of the CSV, so a job that runs twice (a worker lost after
it finished, Dask's at-least-once delivery) is harmless.

Each thread keeps its fork server warm from one job to the next (``warm_server``), so a submission costs
on a worker what it costs locally: a fork and the checks, not a fresh Python and torch import.

A worker of a cluster checks, before it grades, that it may grade this class (``refusal``): the same kit
as the driver's, every device the class is graded on, and the kernel's confinement, unless the instructor
allowed a worker without it. It says why not in one sentence, and grades nothing then.
"""
from __future__ import annotations

import hashlib
import os
import socket
import threading
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

from ...errors import GradingError, SubmissionError
from ...grading.config import CourseConfig
from ...grading.grade import available_devices, grade
from ...grading.results import Record
from ...intake.submission import Submission
from ...paths import KIT_PACKAGE, runtime_files
from ...sandbox.forkserver import ForkServer
from ...sandbox.runner import kernel_isolation

NOT_THEIR_FAULT = "grading failed, not the submission's fault"


@lru_cache(maxsize=1)
def kit_fingerprint() -> str:
    """sha256 of the grader itself (its code and golden data): a record from another kit is stale, and a
    worker running another kit may not grade the class."""
    digest = hashlib.sha256()
    for p in runtime_files():
        digest.update(str(p.relative_to(KIT_PACKAGE)).encode() + b"\0" + p.read_bytes() + b"\0")
    return digest.hexdigest()


@dataclass(frozen=True)
class Job:
    """One student's grading, as the driver sends it. ``source``: a path on this machine (the local pool
    reads it as ``grade`` does), or what intake read of it (a ``Submission``: its files' bytes), for a
    worker that cannot see the driver's disk. ``kit``: the class's kit, which a worker of a cluster must
    run (None: this very process runs it). ``unconfined``: a worker that cannot confine graded code may
    grade (the instructor's choice, said in the summary)."""
    student: str
    name: str  # the entry's name in the class's folder, which the record keeps
    source: Path | Submission
    key: dict
    timeout_s: float | None
    config: CourseConfig
    kit: str | None = None
    unconfined: bool = False


@dataclass
class Done:
    """What a worker returns: the record's data (None: the grader failed, graded again next run), the
    problem for the instructor's log, the grader's own errors (check id, device, traceback), who graded
    it, and, where the worker may not grade this class, why (nothing was graded then)."""
    student: str
    record: dict | None
    problem: str = ""
    grader_errors: list = field(default_factory=list)
    worker: str = ""
    refused: str = ""


def worker_name() -> str:
    """Who grades: the Dask worker's address where this runs in one, else this machine."""
    try:
        from distributed import get_worker  # an optional extra: absent, this is the local pool

        return get_worker().address
    except (ImportError, ValueError):
        return "this machine"


def facts() -> dict:
    """What a worker says of itself when a class starts (``client.run``) and with each refusal: its kit,
    its devices, whether the kernel confines graded code here (and why not), its host and process."""
    return {"kit": kit_fingerprint(), "devices": sorted(available_devices()), "unconfined": kernel_isolation() or "",
            "host": socket.gethostname(), "pid": os.getpid()}


def refusal(kit: str | None, devices, unconfined: bool, found: dict | None = None) -> str:
    """Why a worker (``found``: its ``facts``; by default this one's) may not grade a class of the kit
    ``kit`` on ``devices``, in one sentence; "" where it may."""
    found = found or facts()
    if found["kit"] != kit:
        return (f"it runs another version of the kit ({found['kit'][:12]}, the class's is {str(kit)[:12]}): "
                "install the driver's kit on every worker, or stop this one")
    missing = sorted(set(devices) - set(found["devices"]))
    if missing:
        return (f"it has no {', '.join(missing)}, which this class is graded on: give GPU work to workers started "
                "with --resources GPU=1 that have one")
    if found["unconfined"] and not unconfined:
        return (f"it cannot confine graded code ({found['unconfined']}); fix the node (docs/instructors/grade-all.md, "
                "What a worker needs), or pass --allow-unconfined-workers")
    return ""


_thread = threading.local()


def warm_server(meta: bool, threads: int) -> ForkServer:
    """This thread's fork server, started on its first job and kept for the next: the kernel ties a
    server to the thread that started it, and ends it when that thread ends."""
    server = getattr(_thread, "server", None)
    if server is not None and (server.meta, server.threads) != (meta, threads):
        close_warm_server()  # another class's settings: a server of this one's
        server = None
    if server is None:
        server = ForkServer(meta=meta, threads=threads, beside=False)  # the workers share the cores
        _thread.server = server
    return server


def close_warm_server() -> None:
    server = getattr(_thread, "server", None)
    if server is not None:
        _thread.server = None
        server.close()


def grade_job(job: Job) -> Done:
    """Grade ``job``; never raises for the student's sake, nor for the grader's (its failure is a Done
    that says so, and the student is graded again next run)."""
    who = worker_name()
    try:
        if job.kit is not None:
            refused = refusal(job.kit, job.key["devices"], job.unconfined)
            if refused:
                return Done(job.student, None, worker=who, refused=refused)
        server = warm_server("meta" in job.key["devices"], job.config.threads)
        return grade_one(job, server, who)
    except BaseException as exc:  # the grader's own failure (no grading user free, a bug): the others go on
        said = str(exc) if isinstance(exc, GradingError) else repr(exc)
        return Done(job.student, None, f"{NOT_THEIR_FAULT}: {said}", worker=who)


def grade_one(job: Job, server: ForkServer, who: str = "") -> Done:
    source = job.source if isinstance(job.source, Submission) else Path(job.source)
    try:
        # pictures: a failed check's record carries them, for nbgrader import's feedback
        graded = grade(source, stages=set(job.key["stages"]), devices=job.key["devices"], timeout_s=job.timeout_s,
                       server=server, config=job.config, pictures="failed")
    except SubmissionError as exc:
        return not_graded(job, exc, who)
    except GradingError as exc:
        return Done(job.student, None, f"{NOT_THEIR_FAULT}: {exc}", worker=who)
    record = Record.of(graded, bookkeeping(job))
    return Done(job.student, record.data, record.problem, graded.grader_errors, worker=who)


def not_graded(job: Job, exc: SubmissionError, who: str) -> Done:
    """The record of a submission that cannot be graded at all: intake's sentence for the student, its
    detail for the instructor's log. Intake runs where the job's source is read: in the worker for a
    path, in the driver for a worker of a cluster."""
    record = Record.not_graded(f"Not graded: {exc.student}", exc.student, job.key["stages"], bookkeeping(job),
                               job.config)
    return Done(job.student, record.data, str(exc), worker=who)


def bookkeeping(job: Job) -> dict:
    return {"student": job.student, "source": job.name, **job.key}
