"""Grade a submission: plan the probe tasks, run them in the child, judge what comes back."""
from __future__ import annotations

import inspect
import time
import traceback
from dataclasses import dataclass, field

import torch

from .forms import expected_form, misfit, student_error
from .golden import load_golden
from .feedback import describe_error
from .registry import STAGES, Fail, all_checks
from .runner import TASK_TIMEOUT_S, Task, run_tasks
from .submission import SubmissionError, opened  # noqa: F401  (SubmissionError: part of grade's API)
from .workspace import CopyError


PASSED, FAILED, ERROR = "passed", "failed", "error"  # ERROR: the grader's own fault, regraded later

GRADER_ERROR = ("the grader failed on this check, which is not your fault: the check gets no points for now and "
                "will be graded again once the grader is fixed")


@dataclass
class CheckResult:
    id: str
    stage: int
    title: str
    max_points: int
    status: str  # PASSED, FAILED or ERROR
    feedback: str
    visibility: str

    @property
    def passed(self):
        return self.status == PASSED

    @property
    def points(self):
        return self.max_points if self.passed else 0


@dataclass
class Graded:
    results: list  # of CheckResult, in stage order
    seconds: float
    isolation: dict  # what protected the run (user, network, limits), for the report
    origins: dict  # module -> where its code came from (a module file, or a notebook)
    grader_errors: list = field(default_factory=list)  # (check id, device, traceback): for the instructor

    @property
    def regrade(self):
        """The checks the grader failed on: they must be graded again by a fixed kit."""
        return [r.id for r in self.results if r.status == ERROR]


def available_devices():
    return {"cpu", "meta"} | ({"cuda"} if torch.cuda.is_available() else set())


def plan(checks, devices):
    stages = sorted({c.stage for c in checks})
    modules = [STAGES[s].module for s in stages]
    if "multihead" in modules and "causal" not in modules:
        modules.insert(0, "causal")  # the wrapper's heads come from causal.py
    tasks = [Task("import", m) for m in modules]
    for c in checks:
        for d in c.devices:
            if d in devices and Task("probe", c.probe, d) not in tasks:
                tasks.append(Task("probe", c.probe, d))
    return tasks


@dataclass(frozen=True)
class Verdict:
    status: str  # PASSED, FAILED or ERROR
    text: str = ""  # FAILED: the feedback; PASSED: what the judge measured, if anything
    trace: str = ""  # ERROR: the judge's traceback, for the instructor only


def judge(check, obs, golden, device) -> Verdict:
    """One check's verdict on one device. Never raises: a ``Fail`` is the student's, an observation
    unlike the reference's that the judge could not handle is the student's too (it could not be
    measured), and any other exception is the grader's own bug (ERROR), never the student's loss."""
    try:
        if obs is None:
            return Verdict(FAILED, "no result came back for this check")
        if isinstance(obs, dict) and "error" in obs:
            return Verdict(FAILED, describe_error(obs["error"]))
        if "device" in inspect.signature(check.judge).parameters:
            note = check.judge(obs, golden, device=device)
        else:
            note = check.judge(obs, golden)
    except Fail as exc:
        return Verdict(FAILED, str(exc) or "failed")
    except Exception:
        trace = traceback.format_exc()
        try:
            form = expected_form(check.probe, device)
            raised = student_error(obs, form)
            if raised:
                return Verdict(FAILED, describe_error(raised))
            unlike = misfit(obs, form)
            if unlike:
                return Verdict(FAILED, f"this check could not measure your code: {unlike}")
        except Exception:  # the kit itself is broken (its forms missing): the grader's error all the same
            trace += traceback.format_exc()
        return Verdict(ERROR, trace=trace)
    return Verdict(PASSED, note if isinstance(note, str) else "")


def grade(submission, stages=None, devices=None, timeout_s=None, server=None):
    """Grade ``submission`` (a path: see ``submission.py``), in children forked by ``server``
    (a ``ForkServer``; by default one of its own).

    Raises SubmissionError when the submission cannot be graded at all, GradingError when the
    grader itself failed."""
    started = time.monotonic()
    golden = load_golden()  # before any student code runs
    devices = available_devices() if devices is None else set(devices)
    with opened(submission) as sub:
        checks = all_checks(stages if stages is not None else sub.stages)
        try:
            run = run_tasks(sub, plan(checks, devices), timeout_s=timeout_s or TASK_TIMEOUT_S, server=server)
        except CopyError as exc:
            raise SubmissionError(str(exc)) from None
    results, errors = [], []
    for c in checks:
        ran = [d for d in c.devices if d in devices]
        verdicts = {d: judge(c, run.observations.get(Task("probe", c.probe, d)), golden.get(c.probe), d) for d in ran}
        errors += [(c.id, d, v.trace) for d, v in verdicts.items() if v.status == ERROR]
        results.append(combine(c, verdicts, [d for d in c.devices if d not in devices]))
    return Graded(results, time.monotonic() - started, run.isolation, sub.origins, errors)


def combine(check, verdicts, skipped):
    """One result from the verdicts of every device the check ran on: it passes when all passed, and
    fails when the student's code failed on any. A grader error decides it only when nothing failed:
    then the outcome is unknown, and the check is the grader's to grade again."""
    def said(d, text):
        return text if len(verdicts) == 1 else f"[{d}] {text}"

    problems = [said(d, v.text) for d, v in verdicts.items() if v.status == FAILED]
    notes = [said(d, v.text) for d, v in verdicts.items() if v.status == PASSED and v.text]
    if not verdicts:
        problems.append(f"none of {', '.join(check.devices)} is available here")
    if problems:
        status, lines = FAILED, problems
    elif any(v.status == ERROR for v in verdicts.values()):
        status, lines = ERROR, [GRADER_ERROR]
    else:
        where = f" (checked on {', '.join(verdicts)}; {', '.join(skipped)} not available)" if skipped else ""
        status, lines = PASSED, ["passed" + where] + notes
    return CheckResult(check.id, check.stage, check.title, check.points, status, clean("\n".join(lines)),
                       check.visibility)


FEEDBACK_MAX = 2000


def clean(text):
    """Feedback may quote the submission's own strings: no control characters (they could
    rewrite a grader's terminal), and not more than a screenful."""
    text = "".join(ch if ch in "\n\t" or ch.isprintable() else "?" for ch in text)
    return text if len(text) <= FEEDBACK_MAX else text[:FEEDBACK_MAX] + " ..."
