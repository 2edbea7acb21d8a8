"""Time grading on the bundled material: ``python -m tools.bench [--repeat N] [--busy N | --nbgrader | --html]``.

Without options: ``attention-lab grade`` on the reference and on the stubs, as commands, in turns with
``python -c 'import torch'``, each grading also as a multiple of that import. With ``--busy N``: then the
same again beside N processes that spin on the CPU (a busy machine: a class graded with several workers,
a shared runner), each grading's slowest run given as a multiple of its quiet median. With ``--html``:
``attention-lab grade solutions`` without and with ``--html report.html``, in turns, and the report's size.
With ``--nbgrader``: one submission (the reference typed into the course's notebooks) graded as an
instructor would, in turns: ``nbgrader autograde`` against ``attention-lab grade`` on the same submitted
folder. Figures are wall-clock seconds (median and range over the repeats).
"""
import argparse
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from contextlib import contextmanager
from pathlib import Path

import torch

from autograder.paths import KIT_ROOT


def command(args, outcome=lambda out: "-", cwd=KIT_ROOT, env=None):
    """One run of ``args`` as a fresh command, as a user runs it; it returns ``outcome(its stdout)``, and a
    failure stops the bench."""
    def run():
        done = subprocess.run([str(a) for a in args], capture_output=True, text=True, cwd=cwd, env=env)
        if done.returncode:
            sys.exit(f"{' '.join(map(str, args))} failed ({done.returncode}):\n{done.stderr[-3000:]}")
        return outcome(done.stdout)
    return run


def in_turns(runs, repeat):
    """Each of ``runs`` (name -> run) ``repeat`` times, in turns, so that a drift of the machine hits all of
    them alike: ({name: seconds of each run}, {name: what the runs gave: one outcome, or each different one})."""
    times, outcomes = {name: [] for name in runs}, {name: [] for name in runs}
    for _ in range(repeat):
        for name, run in runs.items():
            start = time.perf_counter()
            outcomes[name].append(run())
            times[name].append(time.perf_counter() - start)
    return times, {name: " | ".join(dict.fromkeys(said)) for name, said in outcomes.items()}


def show(times, said, note=lambda name, seconds: ""):
    """A line per command: what it gave, the median and range of its times, and ``note``'s words."""
    for name, seconds in times.items():
        print(f"{name:<28} {said[name]:>8}  median {statistics.median(seconds):6.2f} s  "
              f"(min {min(seconds):.2f}, max {max(seconds):.2f}, {len(seconds)} runs)" + note(name, seconds))


def total(out):  # "Total 300/300 points, ..."
    return next(line.split()[1] for line in out.splitlines() if line.startswith("Total "))


GRADE = [sys.executable, "-m", "autograder.cli", "grade"]
FLOOR = "python -c 'import torch'"


def gradings():
    """``attention-lab grade`` on the reference and on the stubs, and ``python -c 'import torch'``: the
    floor any grading in Python pays, of which each grading is given as a multiple."""
    return {FLOOR: command([sys.executable, "-c", "import torch"]),
            "grade solutions": command([*GRADE, "solutions"], total),
            "grade assignments": command([*GRADE, "assignments"], total)}


def bench_grade(repeat, busy_count=0):
    """The gradings in turns with the floor, on a quiet machine; with ``busy_count``, then again beside that
    many busy processes, each grading's slowest busy run also given as a multiple of its quiet median."""
    quiet, said = in_turns(gradings(), repeat)
    floor = statistics.median(quiet[FLOOR])
    show(quiet, said, lambda name, seconds: f"  {statistics.median(seconds) / floor:4.2f}x import torch")
    if busy_count:
        with busy(busy_count):
            loaded, said = in_turns(gradings(), repeat)
        print(f"beside {busy_count} busy processes:")
        show(loaded, said, lambda name, seconds: f"  slowest {max(seconds) / statistics.median(quiet[name]):4.2f}x "
             "its quiet median")


def bench_nbgrader(repeat):
    from autograder.authoring.course import DEFAULT_ASSIGNMENT as ASSIGNMENT
    from autograder.authoring.course import init_course
    from tools.zoo import hand_in, reference_code

    bin_dir = Path(sys.executable).parent
    if not (bin_dir / "nbgrader").exists():
        sys.exit("nbgrader is not installed beside this Python: pip install -e '.[nbgrader]'")
    env = {**os.environ, "PATH": f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}"}
    with tempfile.TemporaryDirectory() as tmp:
        course, _ = init_course(Path(tmp) / "course", log=lambda *_: None)
        command([bin_dir / "nbgrader", "generate_assignment", ASSIGNMENT], cwd=course, env=env)()
        folder = hand_in(course / "release" / ASSIGNMENT, course / "submitted" / "alice" / ASSIGNMENT,
                         reference_code())
        times, said = in_turns({
            "nbgrader autograde": command([bin_dir / "nbgrader", "autograde", ASSIGNMENT, "--create", "--force",
                                           "--student", "alice"], lambda _: "graded", cwd=course, env=env),
            "attention-lab grade": command([*GRADE, folder], total, cwd=course, env=env)}, repeat)
        show(times, said)


def bench_html(repeat):
    with tempfile.TemporaryDirectory() as tmp:
        report = Path(tmp) / "report.html"
        times, said = in_turns({"grade solutions": command([*GRADE, "solutions"], total),
                                "grade solutions --html": command([*GRADE, "solutions", "--html", report], total)},
                               repeat)
        show(times, said)
        adds = statistics.median(times["grade solutions --html"]) - statistics.median(times["grade solutions"])
        size = report.stat().st_size / 1024
        print(f"the report: {size:.0f} KiB; --html adds {adds:.2f} s (difference of the medians)")


@contextmanager
def busy(count, cpus=None, sessions=False):
    """``count`` processes that spin on the CPU (pinned to ``cpus`` when given) for at most 10
    minutes each, stopped when the block ends. ``sessions``: each in a session of its own, as another
    user's programs would be: where the scheduler shares a CPU between sessions first (autogroups),
    spinners of one session take one share together, however many they are."""
    spin = "import time\nend = time.monotonic() + 600\nwhile time.monotonic() < end:\n    pass\n"
    procs = []
    try:
        for _ in range(count):
            procs.append(subprocess.Popen([sys.executable, "-c", spin], start_new_session=sessions,
                                          preexec_fn=(lambda: os.sched_setaffinity(0, cpus)) if cpus else None))
        time.sleep(0.3)
        yield
    finally:
        for p in procs:
            p.kill()
            p.wait()


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--nbgrader", action="store_true", help="nbgrader autograde vs attention-lab grade")
    parser.add_argument("--html", action="store_true", help="attention-lab grade with and without --html")
    parser.add_argument("--busy", type=int, default=0, metavar="N",
                        help="grade beside N processes that spin on the CPU")
    args = parser.parse_args(argv)
    print(f"torch {torch.__version__}, Python {platform.python_version()}, {platform.machine()}, "
          f"{os.cpu_count()} CPUs, cuda {'available' if torch.cuda.is_available() else 'not available'}"
          + (f", beside {args.busy} busy processes" if args.busy else ""))
    if args.nbgrader or args.html:
        with busy(args.busy):
            (bench_nbgrader if args.nbgrader else bench_html)(args.repeat)
    else:
        bench_grade(args.repeat, args.busy)


if __name__ == "__main__":
    main()
