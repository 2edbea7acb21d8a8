"""Grade a synthetic class: ``python -m tools.bench_class [--students N] [--jobs J] [--nbgrader K] [--cluster W]``.

Builds N submissions of stages 1-5 in nbgrader's layout (``submitted/<student>/attention/``: the
course's notebooks with the student's code typed into their module cells, and ``attention_lab/``
as running them leaves it). Out of every 20 students: 8 correct (the reference, or a correct but
different entry of the zoo), 6 wrong (a zoo entry whose bug costs some checks), 3 partly done
(the first stages solved, the rest left as stubs), 2 untouched stubs and 1 hostile (an attack
from the hostile zoo: hangs, floods, forks, tampering).

Then it times, as commands and from start to end, ``attention-lab grade-all`` on all of them, and
(with ``--nbgrader K`` and nbgrader installed) ``nbgrader autograde`` on K of them, chosen
evenly, hostile ones left out because nbgrader runs student code unconfined on this machine.
``nbgrader autograde`` grades one student after the other. It prints the time per submission,
the throughput of each, and their ratio. With ``--cluster W``: the same class graded again by a Dask
LocalCluster of W worker processes of one thread each (``grade-all --executor dask://...``, into records
of its own), against ``--jobs W`` on this machine, and the cost per submission of going through Dask.
"""
from __future__ import annotations

import argparse
import csv
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import torch

from autograder.authoring.course import DEFAULT_ASSIGNMENT as ASSIGNMENT
from autograder.authoring.course import init_course
from autograder.curriculum import STAGES
from autograder.grading.config import FILE, read_config
from autograder.paths import KIT_ROOT
from tools.zoo import CORRECT, HOSTILE, WRONG, assemble, hand_in, read_entry, reference_code

GRADED = [1, 2, 3, 4, 5]
MODULES = [STAGES[s].module for s in GRADED]
PATTERN = ["correct"] * 8 + ["wrong"] * 6 + ["partial"] * 3 + ["stub"] * 2 + ["hostile"]


def zoo_entries(paths):
    return [(p, e) for p in paths if (e := read_entry(p))["MODULE"] in MODULES]


def student_code(kind, index, scratch, zoo):
    """(module -> code of the five modules, extra files, a label) for the ``index``-th student of
    ``kind``; ``scratch`` is a fresh folder to assemble in."""
    stubs = {m: (KIT_ROOT / "assignments" / "attention_lab" / f"{m}.py").read_text() for m in MODULES}
    reference = {m: code for m, code in reference_code().items() if m in MODULES}
    if kind == "stub":
        return stubs, {}, "stubs"
    if kind == "partial":
        solved = 1 + index % (len(MODULES) - 1)
        return {m: reference[m] if i < solved else stubs[m] for i, m in enumerate(MODULES)}, {}, f"{solved} stages"
    entries = zoo[kind]
    if kind == "correct" and index % 2 == 0:
        return reference, {}, "reference"
    path, entry = entries[index % len(entries)]
    folder = assemble(path, entry, scratch)
    code = {m: (folder / "attention_lab" / f"{m}.py").read_text() for m in MODULES}
    return code, entry["FILES"], path.stem


def build_class(course, n, template):
    """Hand in ``n`` submissions to ``course/submitted``; returns [(student, kind, label)]."""
    zoo = {"correct": zoo_entries(CORRECT), "wrong": zoo_entries(WRONG), "hostile": zoo_entries(HOSTILE)}
    roster = []
    with tempfile.TemporaryDirectory() as scratch:
        for i in range(n):
            kind = PATTERN[i % len(PATTERN)]
            code, files, label = student_code(kind, i // len(PATTERN), Path(scratch) / str(i), zoo)
            student = f"student{i:04d}"
            folder = hand_in(template, course / "submitted" / student / ASSIGNMENT, code)
            for name, text in files.items():
                (folder / name).parent.mkdir(parents=True, exist_ok=True)
                (folder / name).write_text(text)
            roster.append((student, kind, label))
    return roster


def nbgrader_bin():
    found = Path(sys.executable).parent / "nbgrader"
    return found if found.exists() else None


def command(args, cwd=None, env=None):
    start = time.perf_counter()
    proc = subprocess.run([str(a) for a in args], cwd=cwd, env=env, capture_output=True, text=True)
    seconds = time.perf_counter() - start
    if proc.returncode not in (0, 1):  # grade-all exits 1 when the grader failed on a submission
        sys.exit(f"{' '.join(map(str, args))} failed ({proc.returncode}):\n{proc.stderr[-3000:]}")
    return seconds, proc


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--students", type=int, default=200)
    parser.add_argument("--jobs", type=int, default=os.cpu_count())
    parser.add_argument("--nbgrader", type=int, default=0, metavar="K", help="also autograde K students with nbgrader")
    parser.add_argument("--keep", metavar="DIR", help="build the class in DIR and keep it (default: a temp folder)")
    parser.add_argument("--cluster", type=int, default=0, metavar="W",
                        help="also grade the class on a Dask LocalCluster of W single-thread workers, against --jobs W")
    args = parser.parse_args(argv)
    print(f"torch {torch.__version__}, Python {platform.python_version()}, {platform.machine()}, "
          f"{os.cpu_count()} CPUs, {time.strftime('%Y-%m-%d')}", flush=True)
    nbgrader = nbgrader_bin()
    if args.nbgrader and nbgrader is None:
        sys.exit("nbgrader is not installed beside this Python: pip install -e '.[nbgrader]'")
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"}

    work = Path(args.keep) if args.keep else Path(tempfile.mkdtemp(prefix="attention-lab-bench-"))
    try:
        (work / "course").mkdir(parents=True)  # the class works on stages 1-5: the course's configuration says so
        settings = work / "course" / FILE
        settings.write_text(f"stages = {list(GRADED)}\n")
        course, _ = init_course(work / "course", log=lambda *_: None, config=read_config(settings))
        template = course / "source" / ASSIGNMENT
        if args.nbgrader:  # nbgrader grades what its release holds: hand in copies of that
            command([nbgrader, "generate_assignment", ASSIGNMENT], cwd=course, env=env)
            template = course / "release" / ASSIGNMENT
        started = time.perf_counter()
        roster = build_class(course, args.students, template)
        kinds = {k: sum(1 for _, kind, _ in roster if kind == k) for k in dict.fromkeys(PATTERN)}
        print(f"built {len(roster)} submissions in {time.perf_counter() - started:.1f} s: "
              + ", ".join(f"{v} {k}" for k, v in kinds.items()), flush=True)

        out = work / "grades" / "grades.csv"
        stage_args = [a for s in GRADED for a in ("--stage", str(s))]
        jobs = args.cluster or args.jobs  # against a cluster: as many threads here as it has workers
        seconds, _ = command([sys.executable, "-m", "autograder.cli", "grade-all", course / "submitted",
                              "--out", out, "--jobs", jobs, *stage_args], env=env)
        report_grade_all(seconds, roster, out, jobs)
        if args.cluster:
            report_cluster(course, roster, args.cluster, stage_args, env, seconds, out)
            report_driver(course, roster, out)
        if args.nbgrader:
            report_nbgrader(course, roster, args.nbgrader, nbgrader, env, seconds / len(roster))
    finally:
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)


def report_grade_all(seconds, roster, out, jobs):
    with open(out, newline="") as f:
        totals = {row["student"]: row["total"] for row in csv.DictReader(f)}
    records = out.with_name(out.stem + "-results")
    inside = {}  # kind -> seconds each grading took inside its worker
    for student, kind, _ in roster:
        extra = json.loads((records / f"{student}.json").read_text())["extra_data"]
        inside.setdefault(kind, []).append(extra["seconds"])
    n = len(roster)
    print(f"\nattention-lab grade-all, {jobs} workers: {n} submissions in {seconds:.1f} s: "
          f"{seconds / n:.3f} s per submission, {60 * n / seconds:.0f} per minute "
          f"({len(totals)} rows in the CSV)")
    print("  time one grading took in its worker, by kind (median, max):")
    for kind, times in inside.items():
        print(f"    {kind:<8} {len(times):>4}  {statistics.median(times):6.2f} s  {max(times):6.2f} s")
    summary = out.with_suffix(".txt").read_text()
    print("\ngrade-all's summary (" + out.with_suffix(".txt").name + "), from its item analysis on:")
    print(summary[summary.index("checks most failed"):].rstrip())


def report_cluster(course, roster, workers, stage_args, env, local_s, local_out):
    """The class again, on a LocalCluster of ``workers`` processes: its wall clock against the local run's."""
    from tools.local_cluster import local_cluster

    started = time.perf_counter()
    with local_cluster(workers) as (_, address):
        ready = time.perf_counter() - started
        out = local_out.with_name("dask-grades.csv")
        seconds, _ = command([sys.executable, "-m", "autograder.cli", "grade-all", course / "submitted", "--out", out,
                              "--executor", address, *stage_args], env=env)
    n = len(roster)
    same = out.read_text() == local_out.read_text()
    print(f"\nattention-lab grade-all --executor dask:// ({workers} worker processes, 1 thread each; the cluster "
          f"started in {ready:.1f} s, not counted): {n} submissions in {seconds:.1f} s: {seconds / n:.3f} s per "
          f"submission, {60 * n / seconds:.0f} per minute")
    print(f"Dask's cost: {seconds - local_s:+.1f} s in all, {(seconds - local_s) / n * 1000:+.0f} ms per submission "
          f"({(seconds / local_s - 1) * 100:+.0f} %); the CSV {'equals' if same else 'DIFFERS FROM'} the local run's")


def report_driver(course, roster, out):
    """What the driver of a cluster run spends per submission, in its one thread: intake's read of the
    submission (sent to a worker as bytes), pickling it, writing the record the worker returns, and
    rewriting the CSV (at most once a second; timed here for a class of 50,000 rows)."""
    import pickle

    from autograder.delivery.classrun.grade_all import Entry, csv_text, fingerprint
    from autograder.delivery.report import write_json
    from autograder.grading.results import Record
    from autograder.intake.submission import read

    records = out.with_name(out.stem + "-results")
    reads, pickles, writes, prints = [], [], [], []
    with tempfile.TemporaryDirectory() as scratch:
        for student, _, _ in roster:
            started = time.perf_counter()
            fingerprint(course / "submitted" / student)  # every run does this for every student, to resume
            prints.append(time.perf_counter() - started)
            started = time.perf_counter()
            try:
                sub = read(course / "submitted" / student)
            except Exception:
                continue
            reads.append(time.perf_counter() - started)
            started = time.perf_counter()
            pickles.append(len(pickle.dumps(sub)))
            pickles[-1] = (pickles[-1], time.perf_counter() - started)
            data = json.loads((records / f"{student}.json").read_text())
            started = time.perf_counter()
            write_json(data, Path(scratch) / f"{student}.json")
            writes.append(time.perf_counter() - started)
    stages = list(STAGES)
    rows = [Entry(f"student{i:05d}", Path(f"student{i:05d}")) for i in range(50_000)]
    record = Record({"score": 0, "extra_data": {"stage_points": {str(s): 1 for s in stages}, "problem": ""}})
    started = time.perf_counter()
    csv_text(rows, {e.student: record for e in rows}, stages, {})
    csv_s = time.perf_counter() - started
    ms = lambda values: f"{statistics.median(values) * 1000:.1f} ms (max {max(values) * 1000:.1f})"  # noqa: E731
    print(f"\nthe driver's own work per submission (median over {len(reads)}): its fingerprint {ms(prints)}, "
          f"intake's read {ms(reads)}, pickling "
          f"{ms([t for _, t in pickles])} for {statistics.median([b for b, _ in pickles]) / 1024:.0f} KiB, writing "
          f"the record {ms(writes)}; rewriting a CSV of 50,000 rows and {len(stages)} stages: {csv_s * 1000:.0f} ms "
          "(at most once a second)")


def report_nbgrader(course, roster, k, nbgrader, env, ours):
    honest = [student for student, kind, _ in roster if kind != "hostile"]
    chosen = set(honest[::max(1, len(honest) // k)][:k])
    sample = course.with_name("nbgrader-course")
    shutil.copytree(course, sample, ignore=lambda folder, names: names if Path(folder).name == "submitted" else [])
    for student in sorted(chosen):
        shutil.copytree(course / "submitted" / student, sample / "submitted" / student)
    seconds, _ = command([nbgrader, "autograde", ASSIGNMENT, "--create", "--force"], cwd=sample, env=env)
    each = seconds / len(chosen)
    print(f"\nnbgrader autograde: {len(chosen)} of them (hostile ones left out), one after the other, in "
          f"{seconds:.1f} s: {each:.2f} s per submission, {60 / each:.1f} per minute")
    print(f"ratio: grade-all grades {each / ours:.0f} times as many submissions per second as nbgrader autograde")
    seconds, _ = command([sys.executable, "-m", "autograder.cli", "nbgrader", "import", sample,
                          "--config", sample / FILE], cwd=sample, env=env)
    print(f"attention-lab nbgrader import (the isolated grader's grades into the same gradebook, no kernel): "
          f"{len(chosen)} in {seconds:.1f} s: {seconds / len(chosen):.2f} s per submission")
    command([nbgrader, "export", "--to", "gradebook.csv"], cwd=sample, env=env)
    print("\nnbgrader export after import (gradebook.csv), and the kit's CSV with stage columns beside it:")
    print((sample / "gradebook.csv").read_text().rstrip())
    print((sample / "attention-lab" / f"{ASSIGNMENT}-grades.csv").read_text().rstrip())


if __name__ == "__main__":
    main()
