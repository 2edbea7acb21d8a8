"""``attention-lab``: grade a submission or a class, or rebuild what is generated from solutions/."""
from __future__ import annotations

import argparse
import sys

from .curriculum import STAGES


def main(argv=None):
    parser = argparse.ArgumentParser(prog="attention-lab", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)

    g = sub.add_parser("grade", help="grade a folder that holds attention_lab/, or the course's notebooks")
    g.add_argument("submission", help="a folder holding attention_lab/ (a copy of assignments/ with edits), "
                   "a notebook of the nbgrader course, or a folder of them (their module cells are graded)")
    g.add_argument("--json", metavar="FILE", help="also write Gradescope's results.json schema to FILE")
    g.add_argument("--stage", type=int, action="append", choices=sorted(STAGES), metavar="N",
                   help="grade only stage N (repeatable)")
    g.add_argument("--verbose", "-v", action="store_true", help="list passed checks too")

    a = sub.add_parser("grade-all", help="grade a folder with one submission per student, resumably")
    a.add_argument("submissions", metavar="SUBMISSIONS_DIR",
                   help="one folder, .zip or .ipynb per student (nbgrader's submitted/ works as it is)")
    a.add_argument("--out", required=True, metavar="CSV",
                   help="the class CSV; the score summary goes beside it, as CSV's name with .txt and .png")
    a.add_argument("--json-dir", metavar="DIR", help="one results.json per student, the record of what is done "
                   "(default: beside the CSV, its name with -results)")
    a.add_argument("--jobs", "-j", type=int, metavar="N", help="students graded at once (default: CPUs, at most 8)")
    a.add_argument("--stage", type=int, action="append", choices=sorted(STAGES), metavar="N",
                   help="grade only stage N (repeatable; default: every stage)")
    a.add_argument("--timeout", type=float, metavar="S", help="seconds one check may run (default: 10)")
    a.add_argument("--keep-records", action="store_true",
                   help="keep the records of an earlier version of the kit: grade only new and changed submissions "
                        "and the rows marked for a regrade (after a fix of the kit)")

    b = sub.add_parser("build", help="regenerate stubs, the public checks' helper and golden data")
    b.add_argument("--check", action="store_true", help="only report drift; exit 1 if anything differs")
    b.add_argument("--no-golden", action="store_true", help="skip the golden data (faster)")

    n = sub.add_parser("nbgrader", help="an nbgrader course generated from solutions/")
    n_sub = n.add_subparsers(dest="action", required=True)
    i = n_sub.add_parser("init", help="write nbgrader_config.py and source/ASSIGNMENT/ into COURSE_DIR")
    i.add_argument("course_dir", metavar="COURSE_DIR")
    i.add_argument("--assignment", help="nbgrader's name for the assignment (default: attention)")
    i.add_argument("--force", action="store_true", help="overwrite files that differ from what init writes")

    e = sub.add_parser("export", help="write an autograder for a grading platform")
    e_sub = e.add_subparsers(dest="target", required=True)
    gs = e_sub.add_parser("gradescope", help="a Gradescope autograder zip: setup.sh, run_autograder and the kit")
    gs.add_argument("--out", required=True, metavar="FILE", help="the zip to write, such as autograder.zip")
    gs.add_argument("--stage", type=int, action="append", choices=sorted(STAGES), metavar="N",
                    help="grade only stage N (repeatable; default: every stage)")

    args = parser.parse_args(argv)
    return {"grade": _grade, "grade-all": _grade_all, "build": _build, "nbgrader": _nbgrader,
            "export": _export}[args.command](args)


def _grade(args):
    from .delivery.report import render_table, write_json
    from .errors import GradingError, SubmissionError
    from .grading.grade import grade

    print(f"grading {args.submission} ...", file=sys.stderr, flush=True)
    try:
        graded = grade(args.submission, stages=set(args.stage) if args.stage else None)
    except SubmissionError as exc:
        print(f"attention-lab: {exc}", file=sys.stderr)
        return 2
    except GradingError as exc:
        print(f"attention-lab: grading failed, not the submission's fault: {exc}", file=sys.stderr)
        return 1
    results, seconds = graded.results, graded.seconds
    if any(o.endswith(".ipynb") for o in graded.origins.values()):
        print("code: " + "; ".join(f"{m}.py from {o}" for m, o in graded.origins.items()), file=sys.stderr)
    print(render_table(results, seconds, verbose=args.verbose, color=sys.stdout.isatty()))
    print("isolation: " + "; ".join(f"{k}: {v}" for k, v in graded.isolation.items()), file=sys.stderr)
    if args.json:
        write_json(graded.gradescope(), args.json)
        print(f"wrote {args.json}", file=sys.stderr)
    return report_grader_errors(graded.grader_errors)


GRADER_ERRORS = 3  # graded, but some checks hit the grader's own bug: they need a fixed kit and a regrade


def report_grader_errors(errors):
    """Tracebacks of the judges that failed, for the instructor (stderr, never a student's feedback);
    the exit status that says something needs attention."""
    for check_id, device, trace in errors:
        print(f"attention-lab: grader error in {check_id} on {device} (a bug of the kit, not the submission):\n"
              f"{trace}", file=sys.stderr)
    if errors:
        print(f"attention-lab: {len(errors)} grader error(s); those checks count 0 for now and are marked for "
              "regrading (please report the traceback above)", file=sys.stderr)
    return GRADER_ERRORS if errors else 0


def _grade_all(args):
    from .delivery.classrun.grade_all import grade_all
    from .errors import UsageError

    if args.jobs is not None and args.jobs < 1:
        print("attention-lab: --jobs must be at least 1", file=sys.stderr)
        return 2
    try:
        failed = grade_all(args.submissions, args.out, json_dir=args.json_dir, jobs=args.jobs, stages=args.stage,
                           timeout_s=args.timeout, keep_records=args.keep_records)
    except UsageError as exc:
        print(f"attention-lab: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("\nattention-lab: interrupted; what was graded is saved: run the same command again to finish",
              file=sys.stderr)
        return 130
    if failed:
        print(f"attention-lab: the grader failed on {failed} submission(s), in whole or in some checks (see the "
              "problem column); run the same command again to grade them again (after a fix of the kit, add "
              "--keep-records to grade only those)", file=sys.stderr)
        return 1
    return 0


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
            return 1 if problems else 0
        build(golden=not args.no_golden)
    except BuildError as exc:
        print(f"attention-lab: {exc}", file=sys.stderr)
        return 2
    return 0


def _nbgrader(args):
    from .authoring.course import DEFAULT_ASSIGNMENT, init_course
    from .errors import BuildError

    assignment = args.assignment or DEFAULT_ASSIGNMENT
    try:
        course = init_course(args.course_dir, assignment, force=args.force)
    except BuildError as exc:
        print(f"attention-lab: {exc}", file=sys.stderr)
        return 2
    print(f"course ready in {course}; next: cd {course} && nbgrader generate_assignment {assignment}",
          file=sys.stderr)
    return 0


def _export(args):
    from .delivery.gradescope import CONFIG, export
    from .delivery.pins import torch_pin
    from .errors import BuildError
    from .grading.registry import max_points

    stages = sorted(set(args.stage)) if args.stage else sorted(STAGES)
    try:
        names = export(args.out, stages)
    except (OSError, ValueError, BuildError) as exc:
        print(f"attention-lab: {exc}", file=sys.stderr)
        return 2
    package = [n for n in names if n.startswith("kit/autograder/")]
    print(f"wrote {args.out}: setup.sh (CPU {torch_pin()} in /autograder/venv), run_autograder, and "
          f"kit/ with autograder/ ({len(package)} files, golden data included), constraints.txt and {CONFIG}",
          file=sys.stderr)
    print(f"it grades stage(s) {', '.join(map(str, stages))}: {sum(max_points(s) for s in stages)} points; upload "
          "it as the autograder of a Gradescope programming assignment", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
