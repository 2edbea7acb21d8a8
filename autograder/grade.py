"""Grade a submission: plan the probe tasks, run them in the child, judge what comes back."""
from __future__ import annotations

import inspect
import time
from dataclasses import dataclass

import torch

from .golden import load_golden
from .feedback import describe_error
from .registry import STAGES, Fail, all_checks
from .runner import TASK_TIMEOUT_S, Task, run_tasks
from .submission import SubmissionError, opened  # noqa: F401  (SubmissionError: part of grade's API)
from .workspace import CopyError


@dataclass
class CheckResult:
    id: str
    stage: int
    title: str
    max_points: int
    passed: bool
    feedback: str
    visibility: str

    @property
    def points(self):
        return self.max_points if self.passed else 0


@dataclass
class Graded:
    results: list  # of CheckResult, in stage order
    seconds: float
    isolation: dict  # what protected the run (user, network, limits), for the report
    origins: dict  # module -> where its code came from (a module file, or a notebook)


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


def judge(check, obs, golden, device):
    """``(problem, note)``: what failed (None for a pass), and what a passing judge had to say
    (a measurement, such as a speed ratio; None for most)."""
    if obs is None:
        return "no result came back for this check", None
    if isinstance(obs, dict) and "error" in obs:
        return describe_error(obs["error"]), None
    try:
        if "device" in inspect.signature(check.judge).parameters:
            note = check.judge(obs, golden, device=device)
        else:
            note = check.judge(obs, golden)
    except Fail as exc:
        return str(exc), None
    return None, note


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
    results = []
    for c in checks:
        ran = [d for d in c.devices if d in devices]
        problems, notes = [], []
        for d in ran:
            problem, note = judge(c, run.observations.get(Task("probe", c.probe, d)), golden.get(c.probe), d)
            if problem:
                problems.append(problem if len(ran) == 1 else f"[{d}] {problem}")
            if note:
                notes.append(note if len(ran) == 1 else f"[{d}] {note}")
        skipped = [d for d in c.devices if d not in devices]
        where = f" (checked on {', '.join(ran)}; {', '.join(skipped)} not available)" if skipped and ran else ""
        if not ran:
            problems.append(f"none of {', '.join(c.devices)} is available here")
        passed = not problems
        feedback = clean("\n".join(["passed" + where] + notes if passed else problems))
        results.append(CheckResult(c.id, c.stage, c.title, c.points, passed, feedback, c.visibility))
    return Graded(results, time.monotonic() - started, run.isolation, sub.origins)


FEEDBACK_MAX = 2000


def clean(text):
    """Feedback may quote the submission's own strings: no control characters (they could
    rewrite a grader's terminal), and not more than a screenful."""
    text = "".join(ch if ch in "\n\t" or ch.isprintable() else "?" for ch in text)
    return text if len(text) <= FEEDBACK_MAX else text[:FEEDBACK_MAX] + " ..."
