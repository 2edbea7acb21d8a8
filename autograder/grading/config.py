"""One course configuration: the stages taught, and the points of a stage or of a check.

An instructor writes ``attention-lab.toml`` (in the course, or where the commands run), and every
command that grades or builds for a platform reads it: ``grade``, ``grade-all``, ``nbgrader init``
and ``import``, ``export gradescope`` and ``export classroom``. Each says which configuration it
used. Without one, every stage is taught, with the registry's points::

    # attention-lab.toml
    stages = [1, 2, 3, 4, 5]            # the stages taught (default: all of them)
    require_isolation = true            # stop rather than grade where the kernel cannot confine graded code

    [points]                            # optional
    "s3.causal.no_leak" = 4             # a check's points
    stage4 = 30                         # a stage's total, shared among its checks as their points are

    [gradescope]                        # optional
    hidden = "after_due_date"           # when hidden checks show: after_published (default) or after_due_date
    leaderboard = true                  # stage 8's speed on Gradescope's leaderboard (default: true)
"""
from __future__ import annotations

import dataclasses
import os
from dataclasses import dataclass, field
from pathlib import Path

from ..curriculum import STAGE_OF, STAGES
from ..errors import UsageError
from .registry import VISIBLE, all_checks, registry

FILE = "attention-lab.toml"
ENV = "ATTENTION_LAB_CONFIG"
HIDDEN = ("after_published", "after_due_date")


@dataclass(frozen=True)
class CourseConfig:
    stages: tuple = tuple(sorted(STAGES))
    points: dict = field(default_factory=dict)  # check id -> points, for every check whose points changed
    hidden: str = "after_published"  # Gradescope's visibility of the checks that are not VISIBLE
    leaderboard: bool = True
    require_isolation: bool = False  # grade only where the kernel enforces the child's allow-list
    path: Path | None = None  # where it was read from; None: the defaults

    def checks(self, stages=None):
        """The checks of ``stages`` (default: the stages taught) with this course's points and
        visibility, in stage order."""
        picked = self.stages if stages is None else stages
        return [dataclasses.replace(c, points=self.points.get(c.id, c.points),
                                    visibility=c.visibility if c.visibility == VISIBLE else self.hidden)
                for c in all_checks(set(picked))]

    def max_points(self, stage=None):
        return sum(c.points for c in self.checks(None if stage is None else {stage}))

    def describe(self) -> str:
        """What a command says it used, in one line."""
        if self.path is None:
            return f"course configuration: none ({FILE} not found), so every stage, with the registry's points"
        changed = ", ".join(f"{k} {v}" for k, v in sorted(self.points.items()))
        return (f"course configuration: {self.path}: stage(s) {', '.join(map(str, self.stages))}, "
                f"{self.max_points()} points" + (f"; points of {len(self.points)} check(s) set: {changed}"
                                                  if self.points else ""))

    def as_data(self) -> dict:
        """The configuration as ``from_data`` reads it (the Gradescope zip ships it as JSON)."""
        return {"stages": list(self.stages), "points": dict(self.points), "require_isolation": self.require_isolation,
                "gradescope": {"hidden": self.hidden, "leaderboard": self.leaderboard}}


def from_data(data: dict, path=None) -> CourseConfig:
    """A configuration from parsed TOML (or JSON), checked: an unknown key, stage or check is an error."""
    where = str(path or "the course configuration")
    unknown = set(data) - {"stages", "points", "gradescope", "require_isolation"}
    if unknown:
        raise UsageError(f"{where}: unknown setting(s) {', '.join(sorted(unknown))}; known: stages, points, "
                         "require_isolation, gradescope")
    if not isinstance(data.get("require_isolation", False), bool):
        raise UsageError(f"{where}: require_isolation must be true or false, not {data['require_isolation']!r}")
    if not isinstance(data.get("points", {}), dict) or not isinstance(data.get("gradescope", {}), dict):
        raise UsageError(f"{where}: [points] and [gradescope] are tables (a [points] section of key = value lines), "
                         "not single values")
    stages = data.get("stages", sorted(STAGES))
    if (not isinstance(stages, list) or not stages
            or any(type(s) is not int or s not in STAGES for s in stages)):
        raise UsageError(f"{where}: stages must be a list of stage numbers out of {sorted(STAGES)}, not {stages!r}")
    for n in stages:  # a stage whose code imports an earlier stage's cannot be graded without it
        for module in STAGES[n].builds_on:
            if STAGE_OF[module] not in stages:
                m = STAGE_OF[module]
                raise UsageError(f"{where}: stage {n} ({STAGES[n].module}.py) builds on stage {m} ({module}.py), which "
                                 f"stages does not include: a student's stage {n} imports their own stage {m}, so "
                                 f"stage {m} must be taught too (add {m} to stages)")
    points, own = {}, {}
    for key, value in (data.get("points") or {}).items():
        if not isinstance(value, int) or isinstance(value, bool) or value < 0:
            raise UsageError(f"{where}: points of {key!r} must be a whole number of at least 0, not {value!r}")
        if key in registry():
            own[key] = value
        elif key.startswith("stage") and key[5:].isdigit() and int(key[5:]) in STAGES:
            if int(key[5:]) not in stages:
                raise UsageError(f"{where}: [points] sets {key}, which is not among the stages taught "
                                 f"({', '.join(map(str, stages))})")
            points.update(shared(value, {c.id: c.points for c in all_checks({int(key[5:])})}))
        else:
            raise UsageError(f"{where}: {key!r} in [points] is neither a check id (such as 's3.causal.no_leak') nor "
                             f"a stage (such as 'stage3')")
    points.update(own)  # a check's own points win over its stage's share
    gradescope = data.get("gradescope") or {}
    unknown = set(gradescope) - {"hidden", "leaderboard"}
    if unknown:
        raise UsageError(f"{where}: unknown [gradescope] setting(s) {', '.join(sorted(unknown))}; "
                         "known: hidden, leaderboard")
    if not isinstance(gradescope.get("leaderboard", True), bool):
        raise UsageError(f"{where}: [gradescope] leaderboard must be true or false, not "
                         f"{gradescope['leaderboard']!r}")
    hidden = gradescope.get("hidden", "after_published")
    if hidden not in HIDDEN:
        raise UsageError(f"{where}: [gradescope] hidden must be one of {', '.join(HIDDEN)}, not {hidden!r}")
    changed = {k: v for k, v in points.items() if v != registry()[k].points}
    return CourseConfig(tuple(sorted(set(stages))), changed, hidden, bool(gradescope.get("leaderboard", True)),
                        data.get("require_isolation", False), Path(path) if path else None)


def shared(total: int, weights: dict) -> dict:
    """``total`` whole points shared among the keys of ``weights`` in proportion to their weights
    (largest remainders first), so that they add up to ``total`` exactly: a stage's total among its
    checks here, and among its public tests in the Classroom workflow."""
    weight = sum(weights.values())
    exact = {k: total * w / weight for k, w in weights.items()}
    shares = {k: int(v) for k, v in exact.items()}
    for k in sorted(exact, key=lambda k: exact[k] - shares[k], reverse=True)[: total - sum(shares.values())]:
        shares[k] += 1
    return shares


def load_config(path=None, folder=None) -> CourseConfig:
    """The course configuration: ``path`` if given, else ``$ATTENTION_LAB_CONFIG``, else
    ``attention-lab.toml`` in ``folder`` (a course) or in the working folder; else the defaults."""
    explicit = path or os.environ.get(ENV)
    if explicit:
        if not Path(explicit).is_file():
            raise UsageError(f"{explicit}: no such course configuration")
        return read_config(Path(explicit))
    for candidate in ([Path(folder) / FILE] if folder is not None else []) + [Path.cwd() / FILE]:
        if candidate.is_file():
            return read_config(candidate)
    return CourseConfig()


def read_config(path: Path) -> CourseConfig:
    # Imported here: the Gradescope zip ships its configuration as JSON and runs on Python 3.10
    # (Ubuntu 22.04) without tomli, which only a TOML file needs.
    try:
        import tomllib
    except ImportError:  # Python 3.10
        import tomli as tomllib
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise UsageError(f"{path}: not a valid TOML file ({exc})") from None
    return from_data(data, path.resolve())
