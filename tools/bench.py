"""Time grading on the bundled material: ``python -m tools.bench [--repeat N] [--nbgrader | --html]``.

Without options: ``attention-lab grade`` on the reference and on the stubs, as commands, in turns with
``python -c 'import torch'``, each grading also as a multiple of that import. With ``--busy N``: the same, beside N processes that
spin on the CPU (a busy machine: a class graded with several workers, a shared runner). With ``--html``: ``attention-lab grade
solutions`` as a command, without and with ``--html report.html`` in turns, and the report's size. With ``--nbgrader``: one submission (the
reference typed into the course's notebooks) graded as an instructor would, as commands:
``nbgrader autograde`` against ``attention-lab grade`` on the same submitted folder. Figures are
wall-clock seconds (median and range over the repeats).
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


def timed(repeat, run):
    """(seconds of each run, what the runs gave: one outcome, or each different one, in order)."""
    times, outcomes = [], []
    for _ in range(repeat):
        start = time.perf_counter()
        outcomes.append(run())
        times.append(time.perf_counter() - start)
    return times, " | ".join(dict.fromkeys(outcomes))


def line(name, times, outcome):
    return (f"{name:<28} {outcome:>8}  median {statistics.median(times):6.2f} s  "
            f"(min {min(times):.2f}, max {max(times):.2f}, {len(times)} runs)")


def bench_grade(repeat):
    """``attention-lab grade`` on the reference and on the stubs, each a fresh command as a user runs it,
    in turns with ``python -c 'import torch'`` (the floor any grading in Python pays), so that a drift
    of the machine hits all three alike; each grading's median is also given as a multiple of it."""
    def command(*args, outcome):
        def run():
            done = subprocess.run([sys.executable, *args], capture_output=True, text=True, cwd=KIT_ROOT)
            if done.returncode not in (0,):
                sys.exit(f"{' '.join(args)} failed ({done.returncode}):\n{done.stderr[-3000:]}")
            return outcome(done.stdout)
        return run

    def total(out):  # "Total 300/300 points, ..."
        return next(line.split()[1] for line in out.splitlines() if line.startswith("Total "))

    runs = {"python -c 'import torch'": command("-c", "import torch", outcome=lambda _: "-"),
            "grade solutions": command("-m", "autograder.cli", "grade", "solutions", outcome=total),
            "grade assignments": command("-m", "autograder.cli", "grade", "assignments", outcome=total)}
    times, outcomes = {name: [] for name in runs}, {name: [] for name in runs}
    for _ in range(repeat):
        for name, run in runs.items():
            seconds, outcome = timed(1, run)
            times[name] += seconds
            outcomes[name].append(outcome)
    floor = statistics.median(times["python -c 'import torch'"])
    for name in runs:
        ratio = statistics.median(times[name]) / floor
        print(line(name, times[name], " | ".join(dict.fromkeys(outcomes[name]))) + f"  {ratio:4.2f}x import torch")


def bench_nbgrader(repeat):
    from autograder.authoring.course import DEFAULT_ASSIGNMENT as ASSIGNMENT
    from autograder.authoring.course import hand_in, init_course, reference_code

    bin_dir = Path(sys.executable).parent
    if not (bin_dir / "nbgrader").exists():
        sys.exit("nbgrader is not installed beside this Python: pip install -e '.[nbgrader]'")
    env = {**os.environ, "PATH": f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}"}
    with tempfile.TemporaryDirectory() as tmp:
        course = init_course(Path(tmp) / "course", log=lambda *_: None)

        def command(*args):
            proc = subprocess.run(args, cwd=course, env=env, capture_output=True, text=True)
            if proc.returncode:
                sys.exit(f"{' '.join(map(str, args))} failed:\n{proc.stderr[-3000:]}")
            return proc

        command(bin_dir / "nbgrader", "generate_assignment", ASSIGNMENT)
        folder = hand_in(course / "release" / ASSIGNMENT, course / "submitted" / "alice" / ASSIGNMENT,
                         reference_code())

        def autograde():
            command(bin_dir / "nbgrader", "autograde", ASSIGNMENT, "--create", "--force", "--student", "alice")
            return "graded"

        def attention_lab():
            out = command(sys.executable, "-m", "autograder.cli", "grade", str(folder)).stdout
            return out.strip().splitlines()[-1].split()[1]  # "Total 86/86 points, ..."

        print(line("nbgrader autograde", *timed(repeat, autograde)))
        print(line("attention-lab grade", *timed(repeat, attention_lab)))


def bench_html(repeat):
    with tempfile.TemporaryDirectory() as tmp:
        report = Path(tmp) / "report.html"

        def command(*extra):
            def run():
                subprocess.run([sys.executable, "-m", "autograder.cli", "grade", str(KIT_ROOT / "solutions"), *extra],
                               check=True, capture_output=True)
                return "graded"
            return run

        plain, with_html = [], []
        for _ in range(repeat):  # in turns, so that a drift of the machine hits both alike
            plain += timed(1, command())[0]
            with_html += timed(1, command("--html", str(report)))[0]
        print(line("grade solutions", plain, "text"))
        print(line("grade solutions --html", with_html, "html"))
        print(f"the report: {report.stat().st_size / 1024:.0f} KiB; --html adds "
              f"{statistics.median(with_html) - statistics.median(plain):.2f} s (difference of the medians)")


@contextmanager
def busy(count, cpus=None):
    """``count`` processes that spin on the CPU (pinned to ``cpus`` when given) for at most 10
    minutes each, stopped when the block ends."""
    spin = "import time\nend = time.monotonic() + 600\nwhile time.monotonic() < end:\n    pass\n"
    procs = []
    try:
        for _ in range(count):
            procs.append(subprocess.Popen([sys.executable, "-c", spin],
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
    parser.add_argument("--busy", type=int, default=0, metavar="N", help="grade beside N processes that spin on the CPU")
    args = parser.parse_args(argv)
    print(f"torch {torch.__version__}, Python {platform.python_version()}, {platform.machine()}, "
          f"{os.cpu_count()} CPUs, cuda {'available' if torch.cuda.is_available() else 'not available'}"
          + (f", beside {args.busy} busy processes" if args.busy else ""))
    with busy(args.busy):
        (bench_nbgrader if args.nbgrader else bench_html if args.html else bench_grade)(args.repeat)


if __name__ == "__main__":
    main()
