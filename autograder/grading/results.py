"""One student's results, in one family of types: a ``CheckResult`` per check, ``StageTotal`` per
stage, ``Graded`` for a grading, and ``Record``, what ``grade-all`` keeps of it. Each of Gradescope's
results.json, the class CSV, the summary and the terminal table is read from these."""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from enum import Enum
from pathlib import Path

from ..curriculum import STAGES
from .config import CourseConfig
from .registry import registry


class _Word(str, Enum):
    """A member that is its word wherever a string is: printed, formatted, compared, hashed, in JSON
    (records and results.json hold the plain words, and read back equal)."""
    __str__, __format__, __hash__ = str.__str__, str.__format__, str.__hash__  # type: ignore[assignment]


class Status(_Word):
    PASSED = "passed"
    FAILED = "failed"
    ERROR = "error"  # the grader's own fault, graded again later
    # A device's verdict that counts for nothing either way: a numeric check on CUDA whose code could not
    # run there because a tensor stayed on the CPU (see ``grade.judge``).
    NOT_MEASURED = "not measured"


PASSED, FAILED, ERROR, NOT_MEASURED = Status


class Cause(_Word):
    """Why a check did not pass: what a report, the class summary and an instructor tell apart
    without reading the feedback."""
    STUDENT = "student"  # the code handed in is wrong
    UNTOUCHED = "untouched"  # the code it needs was never written: the stub's NotImplementedError, no module
    TOO_SLOW = "too slow"  # it ran out of its time
    GRADER = "grader"  # the grader's own failure (ERROR), or no device to check it on: not the student's


GRADER_ERROR = ("the grader failed on this check, which is not your fault: the check gets no points for now and "
                "will be graded again once the grader is fixed")


@dataclass
class CheckResult:
    id: str
    stage: int
    title: str
    max_points: int
    status: Status  # PASSED, FAILED or ERROR
    feedback: str
    visibility: str
    values: dict = field(default_factory=dict)  # what a passed check measured, name -> number (lower is better)
    devices: dict = field(default_factory=dict)  # device -> its verdict's status there (where the check ran)
    cause: Cause | None = None  # why it did not pass (None: it passed)

    @property
    def kind(self):
        """What the check looks at, from its id: ``s3.causal.no_leak`` -> ``no_leak``."""
        return self.id.rsplit(".", 1)[-1]

    @property
    def passed(self):
        return self.status == PASSED

    @property
    def points(self):
        return self.max_points if self.passed else 0


@dataclass(frozen=True)
class StageTotal:
    stage: int
    points: int
    max_points: int
    passed: int  # checks passed
    checks: int


def stage_totals(results) -> dict[int, StageTotal]:
    """{stage: its total} in stage order."""
    stages = sorted({r.stage for r in results})
    return {s: StageTotal(s, sum(r.points for r in results if r.stage == s),
                          sum(r.max_points for r in results if r.stage == s),
                          sum(r.passed for r in results if r.stage == s),
                          sum(r.stage == s for r in results)) for s in stages}


@dataclass
class Graded:
    results: list  # of CheckResult, in stage order
    seconds: float
    isolation: dict = field(default_factory=dict)  # what protected the run (user, network, limits)
    origins: dict = field(default_factory=dict)  # module -> where its code came from (a file, a notebook)
    grader_errors: list = field(default_factory=list)  # (check id, device, traceback): for the instructor
    notes: list = field(default_factory=list)  # what the student should know about what was graded
    pictures: dict = field(default_factory=dict)  # probe -> [public.pictures.Picture] (see grade's pictures)
    flagged: list = field(default_factory=list)  # where it reaches for the interpreter's internals (intake.review)

    def _extra(self, result, drawn) -> dict:
        """A test's ``extra_data``: a grader error's mark, why a check failed (``Cause``: the class
        summary counts the untouched apart), and a failed check's pictures (SVG text, and what each shows
        in words: its alt text), which the Gradescope runner shows inline and nbgrader import under the
        grade cell."""
        extra: dict[str, object] = {"grader_error": True} if result.status == ERROR else {}
        if result.cause is not None:
            extra["cause"] = result.cause
        if self.isolation.get("files"):  # each check says what confined it: "kernel" or "python" (docs/security.md)
            extra["isolation"] = self.isolation["files"]
        if not result.passed and drawn.get(result.id):
            extra["pictures"] = [{"kind": p.kind, "flagged": p.flagged, "svg": p.svg, "alt": p.alt}
                                 for p in drawn[result.id]]
        return extra

    def pictures_of(self) -> dict:
        """check id -> its pictures: a probe's pictures go with the first of its checks that failed
        (where the student looks), or with its first check when all passed."""
        placed: dict[str, list] = {}
        by_probe: dict[str, list[CheckResult]] = {}
        for r in self.results if self.pictures else []:
            check = registry().get(r.id)
            if check is not None:
                by_probe.setdefault(check.probe, []).append(r)
        for probe, found in self.pictures.items():
            results = by_probe.get(probe, [])
            if results:
                placed[next((r for r in results if not r.passed), results[0]).id] = found
        return placed

    @property
    def regrade(self):
        """The checks the grader failed on: they must be graded again by a fixed kit."""
        return [r.id for r in self.results if r.status == ERROR]

    @property
    def totals(self) -> dict[int, StageTotal]:
        return stage_totals(self.results)

    def gradescope(self, leaderboard=True) -> dict:
        """Gradescope's results.json: one test per check, with its visibility and its tags (the stage,
        and the kind of check), and, with ``leaderboard``, the measured values (stage 8's speed
        ratio) on Gradescope's leaderboard.

        Gradescope knows a test's status as passed or failed only, so a check the grader failed on
        is "failed" with ``extra_data.grader_error`` set, and the top level's ``extra_data.regrade``
        lists them: what a fixed kit must grade again."""
        drawn = self.pictures_of()
        data = {
            "score": sum(r.points for r in self.results),
            "execution_time": round(self.seconds, 2),
            "stdout_visibility": "hidden",
            "tests": [
                {
                    "name": f"Stage {r.stage}: {r.title}",
                    "number": r.id,
                    "score": r.points,
                    "max_score": r.max_points,
                    "status": "passed" if r.passed else "failed",
                    "output": r.feedback,
                    "visibility": r.visibility,
                    "tags": [f"stage {r.stage}", r.kind],
                    **({"extra_data": extra} if (extra := self._extra(r, drawn)) else {}),
                }
                for r in self.results
            ],
        }
        if self.notes:  # what the student should know about what was graded (a file left aside)
            data["output"] = "\n".join(self.notes)
        board = [{"name": name, "value": round(value, 3), "order": "asc"}
                 for r in self.results for name, value in sorted(r.values.items())]
        if leaderboard and board:
            data["leaderboard"] = board
        data["extra_data"] = {"isolation": self.isolation} if self.isolation else {}
        data["extra_data"]["flagged_for_review"] = self.flagged  # for the instructor: always there, empty when clean
        if self.regrade:
            data["extra_data"]["regrade"] = self.regrade
        if not data["extra_data"]:
            del data["extra_data"]
        return data


def ungradable(output, why, stages, config=None) -> dict:
    """results.json for a submission that could not be graded at all: score 0, ``output`` on top,
    and one failed test per stage, so the student sees what each stage was worth and why it got nothing."""
    return {
        "score": 0,
        "output": output,
        "stdout_visibility": "hidden",
        "tests": [{"name": f"Stage {n}: {STAGES[n].title}", "number": f"s{n}", "score": 0,
                   "max_score": (config or CourseConfig()).max_points(n), "status": "failed",
                   "output": f"not graded: {why}",
                   "visibility": "visible"} for n in stages],
    }


@dataclass
class Record:
    """A student's graded results as ``grade-all`` keeps them: Gradescope's results.json (``data``,
    handed back as it is), with the kit's bookkeeping in its ``extra_data``: the student, what was
    graded (fingerprints, stages, devices, timeout), the points per stage, the problem, if any, and
    the checks to grade again."""
    data: dict

    @classmethod
    def of(cls, graded: Graded, bookkeeping: dict) -> "Record":
        data = graded.gradescope()
        problem = (f"grader error in {', '.join(graded.regrade)} (not the student's fault): those checks count 0 "
                   "until a fixed kit grades this row again" if graded.regrade else "")
        data["extra_data"] = {**data.get("extra_data", {}), **bookkeeping,
                              "stage_points": {str(s): t.points for s, t in graded.totals.items()},
                              "problem": problem, "regrade": graded.regrade, "notes": graded.notes,
                              "seconds": round(graded.seconds, 2)}
        return cls(data)

    @classmethod
    def not_graded(cls, output: str, why: str, stages, bookkeeping: dict, config=None) -> "Record":
        data = ungradable(output, why, stages, config)
        data["extra_data"] = {**bookkeeping, "stage_points": {str(s): 0 for s in stages}, "problem": why,
                              "regrade": [], "seconds": 0, "flagged_for_review": []}  # nothing was read to flag
        return cls(data)

    @classmethod
    def load(cls, path: Path) -> "Record | None":
        """The record in ``path``; None when there is none, or it is unreadable (graded again)."""
        try:
            data = json.loads(Path(path).read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return None
        ok = isinstance(data, dict) and isinstance(data.get("extra_data"), dict)
        return cls(data) if ok and isinstance(data["extra_data"].get("stage_points"), dict) else None

    @property
    def extra(self) -> dict:
        return self.data["extra_data"]

    @property
    def score(self):
        return self.data["score"]

    @property
    def problem(self) -> str:
        return self.extra.get("problem", "")

    @property
    def regrade(self) -> list:
        return self.extra.get("regrade") or []

    def points(self, stages) -> dict[int, int]:
        """{stage: points} for ``stages`` (a stage not graded counts 0)."""
        return {s: self.extra["stage_points"].get(str(s), 0) for s in stages}

    def reusable(self, key: dict, keep_records=False) -> bool:
        """Is this still the student's grade? Not when it is marked for a regrade (the grader failed
        on a check), nor when anything it was graded from has changed; with ``keep_records``, a
        record of an earlier kit is kept, so that a fixed kit grades only the rows it must."""
        if self.regrade:
            return False
        unset: dict[str, list] = {"given": []}  # a record made before the course could give stages: none were given
        return all(self.extra.get(k, unset.get(k)) == v for k, v in key.items() if not (keep_records and k == "kit"))
