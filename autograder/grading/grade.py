"""Grade a submission: plan the probe tasks, run them in the child, judge what comes back."""
from __future__ import annotations

import sys
import threading
import time
import traceback
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass, field

import torch

from .. import probes
from ..curriculum import STAGE_OF, modules_for
from ..intake.review import review
from ..intake.submission import opened
from ..public.feedback import is_error_record
from ..sandbox.protocol import Task
from ..sandbox.runner import TASK_TIMEOUT_S, run_tasks, shortfall, worst_case_s
from ..sandbox.workspace import bindings_out_of_reach, children_own_root
from .config import CourseConfig, given_code
from .forms import expected_form, misfit, student_error
from .golden import load_golden
from .judging import cause_of, described, device_mismatch, holds_error
from .pictures import draw
from .registry import Context, Fail, Note
from .results import ERROR, FAILED, GRADER_ERROR, NOT_MEASURED, PASSED, Cause, CheckResult, Graded


def available_devices():
    return {"cpu", "meta"} | ({"cuda"} if torch.cuda.is_available() else set())


def plan(checks, devices):
    """The tasks a child runs for ``checks`` on ``devices``: import the modules they need (those
    their stages build on first), then every probe they name, once per device."""
    tasks = [Task("import", m) for m in modules_for({c.stage for c in checks})]
    for c in checks:
        for d in c.devices:
            if d in devices and Task("probe", c.probe, d) not in tasks:
                tasks.append(Task("probe", c.probe, d))
    return tasks


def counted(progress, total):
    """The runner's ``progress(task)`` as ``progress(done, total, stage)``: each task counted once (the
    import tasks run in both children where the race runs beside the rest), one call at a time."""
    done, lock = set(), threading.Lock()

    def told(task):
        with lock:
            done.add(task)
            progress(len(done), total, STAGE_OF[task.name] if task.kind == "import" else int(task.stage[1:]))
    return told


def races_in(tasks):
    """The tasks of ``tasks`` that are races (``Probes.race``), each with its race."""
    table = probes.load()
    return {t: table[t.name].fn for t in tasks if t.kind == "probe" and table[t.name].race}


def worst_case(checks, devices, timeout_s=TASK_TIMEOUT_S):
    """``runner.worst_case_s`` of the plan of ``checks`` on ``devices``: the longest a grading of them runs."""
    tasks = plan(checks, devices)
    twins = twin_plan(checks, [(c, Task("probe", c.twin, d)) for c in checks if c.twin for d in c.devices
                               if d in devices])
    return worst_case_s(tasks, timeout_s, races_in(tasks)) + (worst_case_s(twins, timeout_s) if twins else 0)


def twin_plan(checks, twinned) -> list[Task]:
    """The second round's tasks: importing what the ``twinned`` checks' stages need, then their twin probes
    (``twinned``: pairs of a check and its twin's task, each run once)."""
    twins = list(dict.fromkeys(task for _, task in twinned))
    return [Task("import", m) for m in modules_for({c.stage for c, _ in twinned})] + twins if twins else []


def run_plan(submission, tasks, **options):
    """``runner.run_tasks`` for ``tasks`` of ``plan``'s, with what their probes declare: which are races
    (driven from here: ``Probes.race``), which are worth a child of their own (``apart``), and which are of
    a stage written by hand (no library attention): its probes that do not allow it, and the import of its
    module, so that no library attention can be worked out ahead while the module is imported."""
    table = probes.load()
    declared = [t for t in tasks if t.kind == "probe"]
    by_hand = {t.stage for t in declared if not table[t.name].library_attention}
    handwritten = [t for t in declared if not table[t.name].library_attention]
    handwritten += [t for t in tasks if t.kind == "import" and f"s{STAGE_OF[t.name]}" in by_hand]
    return run_tasks(submission, tasks, apart=[t for t in declared if table[t.name].apart], races=races_in(tasks),
                     handwritten=handwritten, **options)


@dataclass(frozen=True)
class Verdict:
    status: str  # PASSED, FAILED or ERROR
    text: str = ""  # FAILED: the feedback; PASSED: what the judge measured, if anything
    trace: str = ""  # ERROR: the judge's traceback, for the instructor only
    values: dict = field(default_factory=dict)  # PASSED: the numbers the judge measured
    cause: Cause = Cause.STUDENT  # FAILED: why


def judge(check, obs, golden, device, twin=None) -> Verdict:
    """One check's verdict on one device. Never raises: a ``Fail`` is the student's, an observation
    unlike the reference's that the judge could not handle is the student's too (it could not be
    measured), and any other exception is the grader's own bug (ERROR), never the student's loss.

    A numeric check that failed on CUDA only because a tensor met one on the CPU is NOT_MEASURED
    there: where tensors belong is what the device checks judge, on ``meta``, the same on every machine,
    so the same code gets the same points with or without a GPU (the book's mask made inside a function
    with ``torch.ones(n, n)`` runs on the CPU, and cannot on CUDA).

    ``twin``: what the check's twin probe returned, if it ran: it may add a sentence to the feedback of a
    check that failed (``Context.twin``), and is read by nothing else here."""
    verdict = _judge(check, obs, golden, device, twin)
    if verdict.status == FAILED and device == "cuda" and "cpu" in check.devices:
        met = device_mismatch(obs)
        if met:
            return Verdict(NOT_MEASURED, f"not measured on cuda, where it could not run: {met}")
    return verdict


def _judge(check, obs, golden, device, twin=None) -> Verdict:
    try:
        if obs is None:
            return Verdict(FAILED, "no result came back for this check")
        if is_error_record(obs):
            return _failed(obs["error"])
        note = check.judge(obs, Context(golden, device, {probe: load_golden()[probe] for probe in check.golden_of},
                                        twin))
    except Fail as exc:
        return Verdict(FAILED, str(exc) or "failed", cause=exc.cause or Cause.STUDENT)
    except Exception:
        trace = traceback.format_exc()
        try:
            form = expected_form(check.probe, device)
            raised = student_error(obs, form)
            if raised:
                return _failed(raised)
            unlike = misfit(obs, form)
            if unlike:
                return Verdict(FAILED, f"this check could not measure your code: {unlike}")
        except Exception:  # the kit itself is broken (its forms missing): the grader's error all the same
            trace += traceback.format_exc()
        return Verdict(ERROR, trace=trace)
    if isinstance(note, Note):
        return Verdict(PASSED, note.text, values=dict(note.values))
    return Verdict(PASSED, note if isinstance(note, str) else "")


def _failed(record) -> Verdict:
    """The verdict of an error record the student's code left: its description and its cause."""
    return Verdict(FAILED, described(record), cause=cause_of(record))


def grade(submission, stages=None, devices=None, timeout_s=None, server=None, config=None, pictures=None,
          progress=None):
    """Grade ``submission`` (a path: see ``intake.submission``), in children forked by ``server``
    (a ``ForkServer``; by default one of its own). ``stages`` default to the stages the course
    teaches (``config``, a ``CourseConfig``; by default every stage), and of a notebook
    submission to those its notebooks hold; points are the course's. A given stage's module
    (``config.given``) that the stages graded import is the kit's reference, whatever was handed in.

    ``pictures``: also draw the student's observations (``grading.pictures``): ``"all"`` (a report),
    or ``"failed"``: only those of probes with a failed check, all that feedback shows (grade-all,
    Gradescope, nbgrader), so that a class of passing submissions draws nothing.

    ``progress(done, total, stage)``: told as each of the grading's ``total`` tasks is done, with the
    stage it belongs to (from one thread at a time).

    Raises SubmissionError when the submission cannot be graded at all, GradingError when the
    grader itself failed."""
    started = time.monotonic()
    config = config or CourseConfig()
    golden = load_golden()  # before any student code runs
    devices = available_devices() if devices is None else set(devices)
    with opened(submission) as sub:
        if stages is None:
            stages = set(config.stages) & (sub.stages if sub.stages is not None else set(config.stages))
        checks = config.checks(stages)
        given = given_code(config, stages)
        sub.give(given)  # what the child imports for a given stage is the kit's reference
        # Every file the child may import, a helper module as much as the course's; not the given modules,
        # which are the kit's own code (reviewed as the reference is, by tests/test_review.py), not the
        # student's, so that a flag never names a student for what the kit wrote.
        code = {path: data for path, data in sub.package_files().items() if path.removesuffix(".py") not in given}
        children_own_root()  # it forks to find out: before a second thread exists
        with ThreadPoolExecutor(1) as beside:
            # The code that runs, read for reaches into the interpreter (named to the instructor, never
            # scored) while the child runs it, in a process of its own (intake.review): this thread only waits.
            reviewed = beside.submit(review, code)
            tasks = plan(checks, devices)
            options = {"timeout_s": timeout_s or TASK_TIMEOUT_S, "server": server,
                       "required": config.require_isolation, "threads": config.threads}
            run = run_plan(sub, tasks, **options, progress=counted(progress, len(tasks)) if progress else None)
            with one_thread():
                twins = twin_plan(checks, failed_twins(checks, devices, run.observations, golden))
            if twins:  # a second child: the same code holding the kit's own part, where the first run failed
                again = run_plan(sub, twins, **options)
                run.observations.update({t: again.observations[t] for t in twins if t.kind == "probe"})
        flagged = reviewed.result()
    _warn_once(run.isolation)
    results, errors, drawn = [], [], {}
    with one_thread():
        for c in checks:
            ran = [d for d in c.devices if d in devices]
            verdicts = {d: judge(c, run.observations.get(Task("probe", c.probe, d)), golden.get(c.probe), d,
                                 run.observations.get(Task("probe", c.twin, d)) if c.twin else None) for d in ran}
            errors += [(c.id, d, v.trace) for d, v in verdicts.items() if v.status == ERROR]
            results.append(combine(c, verdicts))
        if pictures:
            failed = {c.probe for c, r in zip(checks, results) if not r.passed}
            drawn = draw_all([c for c in checks if pictures == "all" or c.probe in failed], run.observations)
    missing = missing_devices_note(checks, devices)
    notes = sub.notes + [missing] * bool(missing)
    return Graded(results, time.monotonic() - started, run.isolation, sub.origins, errors, notes, drawn, flagged)


def failed_twins(checks, devices, observations, golden) -> list[tuple]:
    """(check, its twin's task) for each check with a twin (``Check.twin``) that failed on a device of
    ``devices`` on a run that completed: a run that raised says where already, and one that crashed or
    hung is not asked to again."""
    failed = []
    for c in checks:
        for d in c.devices if c.twin else ():
            obs = observations.get(Task("probe", c.probe, d))
            if (d in devices and obs is not None and not holds_error(obs)
                    and judge(c, obs, golden.get(c.probe), d).status == FAILED):
                failed.append((c, Task("probe", c.twin, d)))
    return failed


def missing_devices_note(checks, devices) -> str:
    """Said once for a grading, not in every check's feedback: the devices some checks would also run on,
    which this machine lacks ("" where none is missing)."""
    missing = sorted({d for c in checks for d in c.devices if d not in devices and set(c.devices) & devices})
    return (f"{' and '.join(missing)} {'is' if len(missing) == 1 else 'are'} not available here: the checks that "
            f"also run on {' and '.join(missing)} where {'it is' if len(missing) == 1 else 'they are'} ran on "
            f"{', '.join(sorted(devices & {d for c in checks for d in c.devices}))} alone") if missing else ""


@contextmanager
def one_thread():
    """torch on one thread (of this thread) while the judges compute: their tensors are tiny, so more
    gain nothing, and beside busy processes every parallel op waits for a thread that the machine holds
    off a core (a judge took 0.27 s instead of 1 ms, a grading 3 s more). The caller's number is kept."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(threads)


PICTURES_MAX_BYTES = 4 * 2**20  # of SVG per grading: what pictures may add to a record, results.json or report.html


def draw_all(checks, observations) -> dict:
    """probe -> the pictures of its observation on cpu, else on its first device (the checks that share
    a probe share its pictures). A picture that cannot be drawn is left out: pictures explain a verdict and never
    decide one. Past ``PICTURES_MAX_BYTES`` of SVG in all, no more are drawn: a record, results.json and a
    report stay bounded whatever the submission returned (each picture is bounded by ``pictures.MAX_SIDE``)."""
    drawn, spent = {}, 0
    for c in checks:
        if spent > PICTURES_MAX_BYTES:
            break
        # values need the cpu; a device check runs only where tensors move (meta, cuda): its first one
        obs = next((observations[t] for d in ("cpu", *c.devices) if (t := Task("probe", c.probe, d)) in observations),
                   None)
        if c.probe in drawn or obs is None:
            continue
        try:
            drawn[c.probe] = draw(c, obs)
            spent += sum(len(p.svg) for p in drawn[c.probe])
        except Exception as exc:  # noqa: BLE001  (a bug in a drawing costs a picture, not a grade)
            print(f"attention-lab: no picture for {c.id}: {type(exc).__name__}: {exc}", file=sys.stderr)
    return {probe: found for probe, found in drawn.items() if found}


def combine(check, verdicts):
    """One result from the verdicts of every device the check ran on: it passes when all passed, and
    fails when the student's code failed on any. A grader error decides it only when nothing failed:
    then the outcome is unknown, and the check is the grader's to grade again."""
    failed = [(d, v.text) for d, v in verdicts.items() if v.status == FAILED]
    same = len({text for _, text in failed}) == 1 and len(failed) == len(verdicts)

    def said(d, text):  # the device named only where it makes a difference
        return text if len(verdicts) == 1 or same else f"[{d}] {text}"

    problems = list(dict.fromkeys(said(d, text) for d, text in failed))
    notes = [said(d, v.text) for d, v in verdicts.items() if v.status in (PASSED, NOT_MEASURED) and v.text]
    measured = [d for d, v in verdicts.items() if v.status != NOT_MEASURED]
    if not verdicts:
        problems.append(f"none of {', '.join(check.devices)} is available here")
    if problems:
        status, lines, cause = FAILED, problems, _cause([v.cause for v in verdicts.values() if v.status == FAILED])
    elif any(v.status == ERROR for v in verdicts.values()):
        status, lines, cause = ERROR, [GRADER_ERROR], Cause.GRADER
    else:
        # Where it was checked, always: the same code can pass on one device and fail on another. A device
        # this machine lacks is said once for the grading (``missing_devices_note``), not here.
        status, lines, cause = PASSED, [f"passed (checked on {', '.join(measured)})"] + notes, None
    values = {k: v for verdict in verdicts.values() if verdict.status == PASSED for k, v in verdict.values.items()}
    return CheckResult(check.id, check.stage, check.title, check.points, status, clean("\n".join(lines)),
                       check.visibility, values if status == PASSED else {},
                       {d: v.status for d, v in verdicts.items()}, cause)


def _cause(causes) -> Cause:
    """Why a check failed: what its first failed device says (the first line of its feedback); with no
    device to check it on, the grader's (the machine's), not the student's."""
    return causes[0] if causes else Cause.GRADER


FEEDBACK_MAX = 2000


def clean(text):
    """Feedback may quote the submission's own strings: no control characters (they could
    rewrite a grader's terminal), and not more than a screenful."""
    text = "".join(ch if ch in "\n\t" or ch.isprintable() else "?" for ch in text)
    return text if len(text) <= FEEDBACK_MAX else text[:FEEDBACK_MAX] + " ..."


_warned: set[str] = set()  # what was said already: each warning once per process


def _warn_once(isolation):
    """Say on stderr, once per process, when graded code went without any of the kit's kernel layers, or
    a resource was held by no kernel layer (``shortfall``): every command that grades (grade, grade-all,
    the Gradescope runner, nbgrader import, the pytest plugin) says so; and when a layer's Python bindings
    are installed where graded code cannot import them (``bindings_out_of_reach``)."""
    for name, where in bindings_out_of_reach().items():
        if name not in _warned:
            _warned.add(name)
            print(f"attention-lab: warning: {name} is installed in {where}, which graded code does not import "
                  "from (only Python's own environment): its layer is missing in the child. Install it into "
                  "the environment of this Python.", file=sys.stderr)
    said = shortfall(isolation)
    if said and said not in _warned:
        _warned.add(said)
        print(f"attention-lab: warning: {said}. docs/security.md says what is then open"
              + ("; --require-isolation stops instead." if isolation.get("not_kernel") else "."), file=sys.stderr)
