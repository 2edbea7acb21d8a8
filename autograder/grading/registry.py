"""The one registry of checks: id, stage, points, title, probe and judge live together.

A check names the *probe* (trusted code that runs beside the student's code in the child
process and returns plain data) and supplies the *judge* (runs in the grading process and
compares that data with golden data or with properties). Points and feedback are declared
here and nowhere else; reports, Gradescope output and notebooks read them from ``registry()``.

Each stage's module in ``checks/`` declares its checks on a ``Checks`` of its own; ``registry()``
gathers them, the first time it is asked. Importing a module of checks changes nothing elsewhere.
"""
from __future__ import annotations

import importlib
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Callable

from ..curriculum import STAGES

# Devices a numeric check runs on. cuda is used when present and reported as not
# available otherwise; the points of a check never depend on which devices ran.
NUMERIC = ("cpu", "cuda")
CPU = ("cpu",)
MOVES = ("meta", "cuda")  # device movement: meta works on every machine, cuda when present

# Gradescope shows a check's result at once when it is VISIBLE, after grades are published
# otherwise. VISIBLE is for checks that the student's public self-checks already make on the same
# inputs (the book's seeded examples, the documented errors): seeing them reveals nothing hidden.
VISIBLE = "visible"


class Fail(Exception):
    """Raised by a judge: the message is the feedback a student reads; ``cause`` why it failed
    (``results.Cause``; by default the student's code is wrong)."""

    def __init__(self, message="", cause=None):
        super().__init__(message)
        self.cause = cause


@dataclass(frozen=True)
class Context:
    """What a judge is given besides the observation: the golden data of its probe (the reference's
    observation, for deterministic probes; None otherwise), the device the probe ran on, the golden
    data of the other probes the check declared it compares with (``golden_of``: probe -> data), and what
    the check's twin probe returned where it ran (``twin``: see ``Check.twin``; None where it did not). The
    twin stays apart from the observation, so that nothing judged of the student's run reads it."""
    golden: object
    device: str
    golden_of: dict = field(default_factory=dict)
    twin: object = None


@dataclass(frozen=True)
class Note:
    """What a judge may return for a passed check: a line of feedback, and the numbers it measured
    (``values``: name -> number), which a platform may show (Gradescope's leaderboard)."""
    text: str
    values: dict = field(default_factory=dict)


@dataclass(frozen=True)
class Check:
    id: str
    stage: int
    points: int
    title: str
    probe: str
    judge: Callable = field(compare=False, repr=False)  # judge(obs, ctx): raises Fail, or returns a note
    devices: tuple = CPU
    visibility: str = "after_published"  # Gradescope: hidden until grades are published
    # Other probes whose golden data the judge compares with (stage 9's layers against stage 4's outputs):
    # declared, so that the judge is given them (``Context.golden_of``) rather than loading them itself.
    golden_of: tuple = ()
    # Runs the student's code of the stages this one builds on, on purpose (stage 10's model made of the
    # student's own attention): a slip there costs here too. Every other check prices one concept (docs/checks.md).
    end_to_end: bool = False
    # For a check of code that calls another part the student wrote: a second probe, the same run with the
    # kit's own part in its place. The grading runs it only where this check failed on a run that completed,
    # and gives the judge what it returned (``Context.twin``), so that the feedback can say which part the
    # mistake is in (``judging.naming_the_part``). It never changes the points.
    twin: str = ""


class Checks(list):
    """The checks of one stage, in order: ``@CHECKS.add(id, ...)`` declares ``judge(obs, ctx)`` as
    one. A judge raises ``Fail`` with feedback, or returns (a string, or a ``Note``, it returns is a
    line added to the passed check's feedback, such as a measured speed)."""

    def __init__(self, stage: int):
        super().__init__()
        self.stage = stage
        self.drawn: dict[str, Callable] = {}  # probe -> draw(obs): its pictures (``grading.pictures``)
        self.looked: tuple[str, str] | None = None  # the notebook's "Look at your attention" cell (``look``)

    def pictures(self, draw: dict[str, Callable]):
        """Declare this stage's pictures: probe -> ``draw(obs)``, a list of ``Picture`` (the family checks of
        ``families.layer`` declare theirs). A probe declared here is drawn this way, whatever its family."""
        self.drawn.update(draw)

    def look(self, imported: str, shown: str):
        """The stage's notebook draws the student's own attention weights for the book's sentence:
        ``imported`` from the stage's module, ``shown`` the expression (a small layer on the book's inputs,
        or a function of them) whose weights are drawn (``authoring.course``'s look cell)."""
        self.looked = (imported, shown)

    def add(self, id, *, points, title, probe, devices=CPU, visibility="after_published", golden_of=(),
            end_to_end=False, twin=""):
        def declare(judge):
            self.append(Check(id, self.stage, points, title, probe, judge, tuple(devices), visibility, tuple(golden_of),
                              end_to_end, twin))
            return judge

        return declare


@lru_cache(maxsize=1)
def declared() -> dict[int, Checks]:
    """Each stage of the curriculum -> what its module ``checks/stage<N>.py`` declares."""
    return {stage: importlib.import_module(f"{__package__}.checks.stage{stage}").CHECKS for stage in sorted(STAGES)}


@lru_cache(maxsize=1)
def registry() -> dict[str, Check]:
    """Every check, id -> ``Check``, in stage order: what each stage's module declares."""
    from .. import probes  # here, not above: the command reads the course's points before torch is imported

    found = {}
    for stage, checks in declared().items():
        for c in checks:
            if c.id in found:
                raise ValueError(f"duplicate check id {c.id!r}")
            if c.stage != stage or not c.id.startswith(f"s{stage}."):
                raise ValueError(f"{c.id} is declared in the checks of stage {stage}")
            # else the child would end on a KeyError, blamed on the submission
            for probe in (c.probe, *c.golden_of, *[c.twin] * bool(c.twin)):
                if probe not in probes.load():
                    raise ValueError(f"{c.id} names the probe {probe!r}, which no module of autograder/probes declares")
            found[c.id] = c
    return found


def all_checks(stages=None):
    """Every check, or those of ``stages``, in stage order."""
    return [c for c in registry().values() if stages is None or c.stage in stages]


def max_points(stage=None):
    return sum(c.points for c in all_checks(None if stage is None else {stage}))
