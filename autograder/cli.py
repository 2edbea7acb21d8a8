"""``attention-lab``: grade a submission or a class, run a course on a platform, or rebuild what is
generated from solutions/."""
from __future__ import annotations

import argparse
import atexit
import dataclasses
import gc
import os
import sys
import threading
import time
from enum import IntEnum
from pathlib import Path

from .curriculum import STAGES


class Exit(IntEnum):
    """The command's exit statuses, for scripts and CI (docs/instructors/grade.md). ``FAILED``: not done
    as asked, through no fault of the input (the grader failed, the isolation asked for is missing,
    grading needs Linux, or ``build --check`` found files out of date)."""
    OK = 0
    FAILED = 1
    USAGE = 2  # what it was given cannot be used: options, a course configuration, a submission
    GRADER_ERRORS = 3  # graded, but some checks hit the grader's own bug: they need a fixed kit and a regrade
    INTERRUPTED = 130  # Ctrl-C; what was graded is kept


def main(argv=None):
    parser = argparse.ArgumentParser(prog="attention-lab", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)

    g = sub.add_parser("grade", help="grade a folder that holds attention_lab/, or the course's notebooks")
    g.add_argument("submission", help="a folder holding attention_lab/ (a copy of assignments/ with edits), "
                   "a notebook of the nbgrader course, or a folder of them (their module cells are graded)")
    g.add_argument("--json", metavar="FILE", help="also write to FILE the results.json Gradescope's runner writes")
    g.add_argument("--html", metavar="FILE", help="also write a self-contained HTML report, with pictures of the "
                   "submission's own attention, to FILE")
    g.add_argument("--stage", type=int, action="append", choices=sorted(STAGES), metavar="N",
                   help=STAGE_HELP)
    g.add_argument("--verbose", "-v", action="store_true",
                   help="list every check (by default: failed checks of the stages worked on), and what held "
                        "each resource of the grading (by default: one line, naming any layer that was missing)")
    _config_option(g)

    a = sub.add_parser("grade-all", help="grade a folder with one submission per student, resumably")
    a.add_argument("submissions", metavar="SUBMISSIONS_DIR",
                   help="one folder, .zip or .ipynb per student (nbgrader's submitted/ works as it is)")
    a.add_argument("--out", required=True, metavar="CSV",
                   help="the class CSV; the score summary goes beside it, as CSV's name with .txt and .svg")
    a.add_argument("--json-dir", metavar="DIR", help="one results.json per student, the record of what is done "
                   "(default: beside the CSV, its name with -results)")
    a.add_argument("--jobs", "-j", type=int, metavar="N",
                   help="students graded at once (default: the CPUs it may use, at most 8)")
    a.add_argument("--stage", type=int, action="append", choices=sorted(STAGES), metavar="N",
                   help=STAGE_HELP)
    a.add_argument("--timeout", type=float, metavar="S", help="seconds one check may run (default: 10)")
    a.add_argument("--keep-records", action="store_true",
                   help="keep the records of an earlier version of the kit: grade only new and changed submissions "
                        "and the rows marked for a regrade (after a fix of the kit)")
    a.add_argument("--executor", default="local", metavar="WHERE",
                   help="where the gradings run: local (this machine's threads, the default) or dask://HOST:PORT "
                        "(the workers of a Dask scheduler; pip install -c constraints.txt -e '.[cluster]'; "
                        "docs/instructors/grade-all.md)")
    a.add_argument("--allow-unconfined-workers", action="store_true",
                   help="let a Dask worker that cannot confine graded code (no user namespaces, Landlock or seccomp) "
                        "grade; the summary names it")
    _config_option(a)

    b = sub.add_parser("build", help="regenerate stubs, the public checks' helper and golden data")
    b.add_argument("--check", action="store_true", help="only report drift; exit 1 if anything differs")
    b.add_argument("--no-golden", action="store_true", help="skip the golden data (faster)")

    ns = sub.add_parser("new-stage", help="write a new stage's own files and its curriculum row "
                        "(docs/instructors/new-stage.md)")
    ns.add_argument("number", type=int, help="the stage's number: the next free one")
    ns.add_argument("module", help="the module its students write, attention_lab/MODULE.py")
    ns.add_argument("--title", default="", help="what the stage is, in a few words (the curriculum row's title)")
    ns.add_argument("--teaches", default="", help="what it teaches, in a line (the curriculum row's)")

    n = sub.add_parser("nbgrader", help="an nbgrader course generated from solutions/")
    n_sub = n.add_subparsers(dest="action", required=True)
    i = n_sub.add_parser("init", help="write nbgrader_config.py and source/ASSIGNMENT/ into COURSE_DIR")
    i.add_argument("course_dir", metavar="COURSE_DIR")
    i.add_argument("--assignment", help="nbgrader's name for the assignment (default: attention)")
    i.add_argument("--force", action="store_true",
                   help="also replace the assignment's files you edited since init wrote them (nbgrader_config.py "
                        "is always merged: only attention-lab's block is rewritten)")
    _config_option(i, isolation=False)
    m = n_sub.add_parser("import", help="grade submitted/ in the isolated runner and put the grades in nbgrader's "
                         "gradebook (instead of `nbgrader autograde`)")
    m.add_argument("course_dir", metavar="COURSE_DIR")
    m.add_argument("--assignment", help="nbgrader's name for the assignment (default: attention)")
    m.add_argument("--jobs", "-j", type=int, metavar="N",
                   help="students graded at once (default: the CPUs it may use, at most 8)")
    m.add_argument("--timeout", type=float, metavar="S", help="seconds one check may run (default: 10)")
    _config_option(m)

    e = sub.add_parser("export", help="write what a platform or a plagiarism checker takes")
    e_sub = e.add_subparsers(dest="target", required=True)
    gs = e_sub.add_parser("gradescope", help="a Gradescope autograder zip: setup.sh, run_autograder and the kit")
    gs.add_argument("--out", required=True, metavar="FILE", help="the zip to write, such as autograder.zip")
    gs.add_argument("--stage", type=int, action="append", choices=sorted(STAGES), metavar="N",
                    help=STAGE_HELP)
    _config_option(gs)
    cr = e_sub.add_parser("classroom", help="a GitHub Classroom template repository: the handout, its README, "
                          "requirements and .gitignore, and the autograding workflow")
    cr.add_argument("--out", required=True, metavar="DIR", help="a new folder for the template")
    _config_option(cr, isolation=False)
    ms = e_sub.add_parser("moss", help="a class's graded code for a plagiarism checker (MOSS, JPlag): a folder "
                          "per student, the stubs as base code")
    ms.add_argument("submissions", metavar="SUBMISSIONS_DIR", help="one folder, .zip or .ipynb per student")
    ms.add_argument("--out", required=True, metavar="DIR", help="a new folder")
    _config_option(ms, isolation=False)

    k = sub.add_parser("config", help="the course configuration")
    k_sub = k.add_subparsers(dest="action", required=True)
    kc = k_sub.add_parser("check", help="print the table the course configuration gives (stages taught and given, "
                          "each check's points, the totals) and its warnings, without grading")
    _config_option(kc, isolation=False)

    args = parser.parse_args(argv)
    if _grades(args) and not sys.platform.startswith("linux"):  # before anything imports the sandbox
        print(f"attention-lab: grading needs Linux, and this is {sys.platform}: the graded code runs in a process "
              "confined with Linux's prctl, namespaces and /proc. Grade in a Linux container or WSL 2; the "
              "students' self-checks (pytest) run anywhere.", file=sys.stderr)
        return Exit.FAILED
    if getattr(args, "config", None) is not None or args.command in CONFIGURED:
        from .errors import UsageError
        from .grading.config import load_config

        try:
            args.course = load_config(args.config, folder=getattr(args, "course_dir", None))
        except UsageError as exc:
            print(f"attention-lab: {exc}", file=sys.stderr)
            return Exit.USAGE
        if getattr(args, "require_isolation", False):
            args.course = dataclasses.replace(args.course, require_isolation=True)
        if getattr(args, "threads", None):
            args.course = dataclasses.replace(args.course, threads=args.threads)
        if _grades(args) and args.course.require_isolation:  # before anything is read or graded
            from .sandbox.runner import IsolationRequired, require_isolation

            try:
                require_isolation()
            except IsolationRequired as exc:
                print(f"attention-lab: {exc}", file=sys.stderr)
                return Exit.FAILED
        print(args.course.describe(verbose=getattr(args, "verbose", False)), file=sys.stderr)
        for warning in args.course.warnings:
            print(f"attention-lab: warning: {warning}", file=sys.stderr)
    return {"grade": _grade, "grade-all": _grade_all, "build": _build, "new-stage": _new_stage, "nbgrader": _nbgrader,
            "export": _export, "config": _config}[args.command](args)


STAGE_HELP = ("grade only stage N (repeatable; default: the stages the course configuration teaches, every stage "
              "without one)")
CONFIGURED = {"grade", "grade-all", "nbgrader", "export", "config"}  # the commands that read the course configuration


def _grades(args) -> bool:
    """Does the command run submitted code (in the sandbox, which needs Linux)?"""
    return args.command in ("grade", "grade-all") or getattr(args, "action", None) == "import"


def _config_option(parser, isolation=True):
    parser.add_argument("--config", metavar="FILE", help="the course configuration (default: $ATTENTION_LAB_CONFIG, "
                        "else attention-lab.toml in the course folder or the working folder; see docs/instructors)")
    if isolation:
        parser.add_argument("--require-isolation", action="store_true",
                            help="stop rather than grade where the kernel cannot confine graded code (no Landlock, "
                                 "or as root no mount namespace either); the course configuration's "
                                 "require_isolation = true does the same")
        parser.add_argument("--threads", type=int, metavar="N", choices=range(1, 65),
                            help="torch threads per grading child (default: 1, or the course configuration's threads)")


def _stages(args):
    """The stages to grade: --stage if given, else those the course configuration names."""
    return sorted(set(args.stage)) if args.stage else list(args.course.stages)


CLEAR = "\r\033[K"  # back to the start of the terminal's line, and the line cleared


def _grade(args):
    for option, path in (("--json", args.json), ("--html", args.html)):
        if path and Path(path).is_dir():  # before grading: nothing is written when a path is unusable
            print(f"attention-lab: {option} {path} is a folder; name the file to write", file=sys.stderr)
            return Exit.USAGE
    from .delivery.report import printable  # no torch: before the fork server starts
    from .errors import GradingError, SubmissionError
    from .sandbox.forkserver import ForkServer

    started = time.monotonic()  # "graded in" is the command's own time, its start-up included
    print(f"grading {args.submission} ...", file=sys.stderr, flush=True)
    on_terminal = sys.stderr.isatty()  # stage by stage on a terminal; on a pipe or in a log, nothing more

    def progress(done, total, stage):
        print(f"{CLEAR}grading {printable(args.submission)}: stage {stage}, {done} of {total} tasks done", end="",
              file=sys.stderr, flush=True)
    try:
        with ForkServer(threads=args.course.threads) as server:
            # First, before this process imports torch and the grader: the fork server's own start
            # (torch, the probes) then runs beside those imports, on another core.
            server.boot()
            from .delivery.report import render_table, write_json
            from .grading.grade import grade

            gc.freeze()  # torch and the grader live as long as this process: no collection need walk them

            # A report shows every probe's pictures; results.json, as Gradescope's, those of failed checks.
            pictures = "all" if args.html else "failed" if args.json else None
            graded = grade(args.submission, stages=set(args.stage) if args.stage else None, config=args.course,
                           pictures=pictures, server=server, progress=progress if on_terminal else None)
    except SubmissionError as exc:
        print(f"{CLEAR if on_terminal else ''}attention-lab: {printable(exc)}", file=sys.stderr)
        return Exit.USAGE
    except GradingError as exc:
        print(f"{CLEAR if on_terminal else ''}attention-lab: grading failed, not the submission's fault: "
              f"{printable(exc)}", file=sys.stderr)
        return Exit.FAILED
    if on_terminal:
        print(CLEAR, end="", file=sys.stderr)  # the progress line, gone before the table
    results, seconds = graded.results, time.monotonic() - started
    if any(o.endswith(".ipynb") for o in graded.origins.values()):
        print("code: " + "; ".join(f"{m}.py from {printable(o)}" for m, o in graded.origins.items()), file=sys.stderr)
    print(render_table(results, seconds, verbose=args.verbose, color=sys.stdout.isatty()))
    for note in graded.notes:
        print(f"note: {printable(note)}")
    from .sandbox.runner import isolation_line

    print(isolation_line(graded.isolation, verbose=args.verbose), file=sys.stderr)
    if args.json:
        from .delivery.gradescope import results_json

        write_json(results_json(graded, args.course), args.json)
        print(f"wrote {args.json}", file=sys.stderr)
    if args.html:
        from .delivery.html_report import render
        from .delivery.report import write_atomically

        write_atomically(Path(args.html), render(graded, f"attention-lab: {Path(args.submission).name}"))
        print(f"wrote {args.html}", file=sys.stderr)
    return report_grader_errors(graded.grader_errors)


def report_grader_errors(errors):
    """Tracebacks of the judges that failed, for the instructor (stderr, never a student's feedback);
    the exit status that says something needs attention."""
    for check_id, device, trace in errors:
        print(f"attention-lab: grader error in {check_id} on {device} (a bug of the kit, not the submission):\n"
              f"{trace}", file=sys.stderr)
    if errors:
        print(f"attention-lab: {len(errors)} grader error(s); those checks count 0 for now and are marked for "
              "regrading (please report the traceback above)", file=sys.stderr)
    return Exit.GRADER_ERRORS if errors else Exit.OK


def _grade_all(args):
    from .delivery.classrun.grade_all import PoolLost, grade_all
    from .errors import UsageError

    if args.jobs is not None and args.jobs < 1:
        print("attention-lab: --jobs must be at least 1", file=sys.stderr)
        return Exit.USAGE
    try:
        failed = grade_all(args.submissions, args.out, json_dir=args.json_dir, jobs=args.jobs, stages=args.stage,
                           timeout_s=args.timeout, keep_records=args.keep_records, config=args.course,
                           executor=args.executor, unconfined=args.allow_unconfined_workers)
    except UsageError as exc:
        print(f"attention-lab: {exc}", file=sys.stderr)
        return Exit.USAGE
    except PoolLost as exc:
        print(f"attention-lab: {exc}", file=sys.stderr)
        return Exit.FAILED
    except KeyboardInterrupt:
        print("\nattention-lab: interrupted; what was graded is saved: run the same command again to finish",
              file=sys.stderr)
        return Exit.INTERRUPTED
    if failed:
        print(f"attention-lab: the grader failed on {failed} submission(s), in whole or in some checks (see the "
              "problem column); run the same command again to grade them again (after a fix of the kit, add "
              "--keep-records to grade only those)", file=sys.stderr)
        return Exit.FAILED
    return Exit.OK


def _new_stage(args):
    from .authoring.new_stage import new_stage
    from .errors import UsageError
    from .paths import KIT_ROOT

    try:
        written = new_stage(args.number, args.module, args.title, args.teaches)
    except UsageError as exc:
        print(f"attention-lab: {exc}", file=sys.stderr)
        return Exit.USAGE
    for path in written:
        print(f"wrote {path.relative_to(KIT_ROOT)}")
    print(f"next: attention-lab build, then python -m tools.stage_tests {args.number}; then write the stage's own "
          f"function in place of the example, file by file (docs/instructors/new-stage.md)")
    return Exit.OK


def _build(args):
    from .authoring.build import build, drift
    from .errors import BuildError

    try:
        if args.check:
            problems = drift(golden=not args.no_golden)
            for p in problems:
                print(p)
            print("in sync with solutions/" if not problems else f"{len(problems)} file(s) out of date: "
                  "run `attention-lab build`")
            return Exit.FAILED if problems else Exit.OK
        build(golden=not args.no_golden)
    except BuildError as exc:
        print(f"attention-lab: {exc}", file=sys.stderr)
        return Exit.USAGE
    return Exit.OK


def _nbgrader(args):
    from .authoring.course import DEFAULT_ASSIGNMENT, init_course
    from .errors import BuildError, GradingError, UsageError

    assignment = args.assignment or DEFAULT_ASSIGNMENT

    def say(text):
        print(text, file=sys.stderr)

    try:
        if args.action == "init":
            course, changes = init_course(args.course_dir, assignment, force=args.force, log=say, config=args.course)
            say(f"course ready in {course}" + (" (nothing changed)" if not any(
                files for change, files in changes.items() if change != "unchanged") else "")
                + f"; next: cd {course} && nbgrader generate_assignment {assignment}")
            return Exit.OK
        from .delivery.nbgrader.importer import import_grades

        failed, out = import_grades(args.course_dir, assignment, args.course, jobs=args.jobs, timeout_s=args.timeout)
    except (BuildError, UsageError) as exc:
        say(f"attention-lab: {exc}")
        return Exit.USAGE
    except GradingError as exc:
        say(f"attention-lab: {exc}")
        return Exit.FAILED
    except KeyboardInterrupt:
        say("\nattention-lab: interrupted; what was graded is saved: run the same command again to finish")
        return Exit.INTERRUPTED
    say(f"imported: formgrader, `nbgrader generate_feedback {assignment}` and `nbgrader export` now show the "
        f"isolated grader's grades; points per stage: {out}")
    if failed:
        say(f"attention-lab: the grader failed on {failed} submission(s), in whole or in some checks; run the same "
            "command again to grade them again")
        return Exit.FAILED
    return Exit.OK


def _config(args):
    from .grading.config import effective_table

    print(effective_table(args.course))
    return Exit.OK


def _export(args):
    from .errors import BuildError, UsageError

    try:
        return {"gradescope": _export_gradescope, "classroom": _export_classroom,
                "moss": _export_moss}[args.target](args)
    except (OSError, ValueError, BuildError, UsageError) as exc:
        print(f"attention-lab: {exc}", file=sys.stderr)
        return Exit.USAGE


def _export_gradescope(args):
    from .delivery.gradescope import CONFIG, LEADERBOARD_STAGE, export
    from .delivery.pins import torch_pin

    config = args.course.teaching(_stages(args)) if args.stage else args.course
    names = export(args.out, config)
    package = [n for n in names if n.startswith("kit/autograder/")]
    print(f"wrote {args.out}: setup.sh (CPU {torch_pin()} in /autograder/venv), run_autograder, and "
          f"kit/ with autograder/ ({len(package)} files, golden data included), constraints.txt and {CONFIG}",
          file=sys.stderr)
    given = f" (given: {', '.join(map(str, config.given))}, the kit's own code)" if config.given else ""
    board = "off" if not config.leaderboard else "on" if LEADERBOARD_STAGE in config.stages else (
        f"none (stage {LEADERBOARD_STAGE}, whose speed it shows, is not graded)")
    print(f"it grades stage(s) {', '.join(map(str, config.stages))}{given}: {config.max_points()} points, hidden "
          f"checks shown {config.hidden}, leaderboard {board}; upload it as the autograder of a Gradescope "
          "programming assignment (base image: Ubuntu 22.04 or later)", file=sys.stderr)
    return Exit.OK


def _export_classroom(args):
    from .delivery.classroom import export, test_points

    files = export(args.out, args.course)
    steps = test_points(args.course)
    print(f"wrote a GitHub Classroom template in {args.out} ({len(files)} files): stage(s) "
          f"{', '.join(map(str, args.course.stages))}, {len(steps)} graded self-checks worth "
          f"{sum(p for _, p in steps.values())} points; push it to a repository, mark it a template, and "
          "create the assignment from it", file=sys.stderr)
    return Exit.OK


def _export_moss(args):
    from .delivery.plagiarism import export
    from .delivery.report import printable

    export(args.submissions, args.out, args.course.stages, log=lambda text: print(printable(text), file=sys.stderr))
    return Exit.OK


def console(argv=None):
    """The command's entry point: ``main``, then an exit that does what Python's own does for the kit
    (the atexit handlers: temporary folders and the like; the output flushed) and leaves the rest to
    the kernel: tearing down every module and object torch made takes 0.1-0.4 s of a grading that
    takes a few. Only with no thread left running; else Python's exit waits for it, as always."""
    code = main(argv)
    if not isinstance(code, int) or threading.active_count() > 1 or not hasattr(atexit, "_run_exitfuncs"):
        return code
    atexit._run_exitfuncs()
    try:
        sys.stdout.flush()
        sys.stderr.flush()
    except OSError:  # a closed pipe, a full disk: what Python's own exit reports then
        code = code or 120
    os._exit(code)


if __name__ == "__main__":
    sys.exit(console())
