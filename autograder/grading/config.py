"""One course configuration: the stages taught, and the points of a stage or of a check.

An instructor writes ``attention-lab.toml`` (in the course, or where the commands run), and every
command that grades or builds for a platform reads it: ``grade``, ``grade-all``, ``nbgrader init``
and ``import``, ``export gradescope`` and ``export classroom``. Each says which configuration it
used, and warns of settings that would surprise (a stage's total that its own checks change, a
check that ends at 0 points); ``attention-lab config check`` prints the table it gives without
grading. Without one, every stage is taught, with the registry's points::

    # attention-lab.toml
    stages = [1, 2, 3, 4, 9]            # the stages taught (default: all of them)
    given = [8]                         # stages not taught whose code a taught stage imports: the kit's own ships
    require_isolation = true            # stop rather than grade where the kernel cannot confine graded code
    threads = 1                         # torch threads per grading child (default 1: see docs/instructors/grade-all.md)

    [points]                            # optional
    "s3.causal.no_leak" = 4             # a check's points
    stage4 = 30                         # a stage's total, shared among its checks as their points are

    [gradescope]                        # optional
    hidden = "after_due_date"           # when hidden checks show: after_published (default) or after_due_date
    leaderboard = true                  # stage 8's speed on Gradescope's leaderboard (default: true)

A stage whose code imports an earlier stage's (``curriculum.Stage.builds_on``: stage 4 uses stage 3's
``CausalAttention``, stage 9 extends stage 8's ``GroupedQueryAttention``) needs that stage taught or
given; otherwise the configuration is refused. A given stage has no notebook and is not graded: the
kit's reference of its module (``solutions/attention_lab/<module>.py``) is in the handout, and every
grading path grades the stages that import it with that reference, whatever the student's file holds.
"""
from __future__ import annotations

import dataclasses
import os
from dataclasses import dataclass, field
from pathlib import Path

from ..curriculum import STAGE_OF, STAGES
from ..errors import GradingError, UsageError
from ..common.markers import solved
from ..paths import KIT_ROOT
from .registry import VISIBLE, all_checks, registry

FILE = "attention-lab.toml"
ENV = "ATTENTION_LAB_CONFIG"
HIDDEN = ("after_published", "after_due_date")
GIVEN = "given"  # beside the kit's package, where no solutions/ is (the Gradescope zip): the given modules


@dataclass(frozen=True)
class CourseConfig:
    stages: tuple = tuple(sorted(STAGES))
    points: dict = field(default_factory=dict)  # check id -> points, for every check whose points changed
    hidden: str = "after_published"  # Gradescope's visibility of the checks that are not VISIBLE
    leaderboard: bool = True
    require_isolation: bool = False  # grade only where the kernel enforces the child's allow-list
    path: Path | None = None  # where it was read from; None: the defaults
    given: tuple = ()  # stages not taught whose module is the kit's reference (a taught stage imports it)
    warnings: tuple = ()  # what in the file would surprise its author (the commands print them once)
    # torch threads per grading child: one, unless the instructor asks for more. The probes' tensors
    # are tiny: more threads gain nothing on a quiet machine and, on a busy one, wait for each other.
    threads: int = 1

    def checks(self, stages=None):
        """The checks of ``stages`` (default: the stages taught) with this course's points and
        visibility, in stage order."""
        picked = self.stages if stages is None else stages
        return [dataclasses.replace(c, points=self.points.get(c.id, c.points),
                                    visibility=c.visibility if c.visibility == VISIBLE else self.hidden)
                for c in all_checks(set(picked))]

    def max_points(self, stage=None):
        return sum(c.points for c in self.checks(None if stage is None else {stage}))

    def given_modules(self, stages=None) -> list[str]:
        """The modules of the given stages that grading ``stages`` (default: those taught) imports."""
        picked = set(self.stages if stages is None else stages)
        needed = {m for n in picked for m in STAGES[n].builds_on}
        return [STAGES[n].module for n in self.given if n not in picked and STAGES[n].module in needed]

    def users_of(self, given: int) -> list[int]:
        """The taught stages whose code imports the given stage's module."""
        return [n for n in self.stages if STAGES[given].module in STAGES[n].builds_on]

    def teaching(self, stages) -> "CourseConfig":
        """This course with ``stages`` taught instead (``--stage``): the given stages that those build
        on stay given, the others are dropped; refused (UsageError) as a file would be."""
        stages = sorted(set(stages))
        needed = {STAGE_OF[m] for n in stages for m in STAGES[n].builds_on}
        data = {**self.as_data(), "stages": stages, "given": sorted(set(self.given) & needed - set(stages))}
        return dataclasses.replace(from_data(data, self.path), warnings=self.warnings)

    def describe(self, verbose=False) -> str:
        """What a command says it used, in one short line; ``verbose``: with every check whose points
        the file set (a stage's total sets each of its checks, so that list can run to a paragraph)."""
        if self.path is None:
            return f"course configuration: none ({FILE} not found), so every stage, with the registry's points"
        given = f" (given: {', '.join(map(str, self.given))})" if self.given else ""
        line = (f"course configuration: {self.path}: stage(s) {', '.join(map(str, self.stages))}{given}, "
                f"{self.max_points()} points")
        taught = {k: v for k, v in self.points.items() if registry()[k].stage in self.stages}  # the rest: warned of
        if not taught:
            return line
        if verbose:
            return line + f"; points of {len(taught)} check(s) set: " + ", ".join(
                f"{k} {v}" for k, v in sorted(taught.items()))
        return line + f"; points of {len(taught)} check(s) set (attention-lab config check lists them)"

    def as_data(self) -> dict:
        """The configuration as ``from_data`` reads it (the Gradescope zip ships it as JSON)."""
        return {"stages": list(self.stages), "points": dict(self.points), "require_isolation": self.require_isolation,
                "gradescope": {"hidden": self.hidden, "leaderboard": self.leaderboard},
                **({"threads": self.threads} if self.threads != 1 else {}),
                **({"given": list(self.given)} if self.given else {})}


def from_data(data: dict, path=None) -> CourseConfig:
    """A configuration from parsed TOML (or JSON), checked: an unknown key, stage or check is an error."""
    where = str(path or "the course configuration")
    unknown = set(data) - {"stages", "given", "points", "gradescope", "require_isolation", "threads"}
    if unknown:
        raise UsageError(f"{where}: unknown setting(s) {', '.join(sorted(unknown))}; known: stages, given, points, "
                         "require_isolation, threads, gradescope")
    threads = data.get("threads", 1)
    if type(threads) is not int or not 1 <= threads <= 64:
        raise UsageError(f"{where}: threads must be a whole number from 1 to 64, not {threads!r}")
    if not isinstance(data.get("require_isolation", False), bool):
        raise UsageError(f"{where}: require_isolation must be true or false, not {data['require_isolation']!r}")
    if not isinstance(data.get("points", {}), dict) or not isinstance(data.get("gradescope", {}), dict):
        raise UsageError(f"{where}: [points] and [gradescope] are tables (a [points] section of key = value lines), "
                         "not single values")
    stages = data.get("stages", sorted(STAGES))
    if (not isinstance(stages, list) or not stages
            or any(type(s) is not int or s not in STAGES for s in stages)):
        raise UsageError(f"{where}: stages must be a list of stage numbers out of {sorted(STAGES)}, not {stages!r}")
    given = _given(data.get("given", []), stages, where)
    points, own, totals, untaught = {}, {}, {}, []
    for key, value in (data.get("points") or {}).items():
        if not isinstance(value, int) or isinstance(value, bool) or value < 0:
            raise UsageError(f"{where}: points of {key!r} must be a whole number of at least 0, not {value!r}")
        if key in registry():
            own[key] = value
        elif key.startswith("stage") and key[5:].isascii() and key[5:].isdigit() and int(key[5:]) in STAGES:
            if int(key[5:]) not in stages:  # as a check of a stage not taught: said, not refused (_surprises)
                untaught.append(key)
                continue
            points.update(shared(value, {c.id: c.points for c in all_checks({int(key[5:])})}))
            totals[int(key[5:])] = value
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
    config = CourseConfig(tuple(sorted(set(stages))), changed, hidden, bool(gradescope.get("leaderboard", True)),
                          data.get("require_isolation", False), Path(path) if path else None, given)
    return dataclasses.replace(config, warnings=_surprises(config, totals, own, untaught), threads=threads)


def _given(given, stages, where) -> tuple:
    """The given stages, checked: each is one that a taught (or given) stage builds on, and is not taught;
    and every stage taught or given has what it builds on, taught or given."""
    if not isinstance(given, list) or any(type(s) is not int or s not in STAGES for s in given):
        raise UsageError(f"{where}: given must be a list of stage numbers out of {sorted(STAGES)}, not {given!r}")
    both = sorted(set(given) & set(stages))
    if both:
        raise UsageError(f"{where}: stage {both[0]} is both in stages (taught: the student writes it) and in given "
                         f"(the kit's own code ships instead); keep it in one of them")
    present = set(stages) | set(given)
    needed = {STAGE_OF[m] for n in present for m in STAGES[n].builds_on}
    for g in sorted(set(given)):
        if g not in needed:
            users = ", ".join(f"stage {n} builds on {STAGE_OF[m]}" for n in sorted(STAGES) for m in STAGES[n].builds_on)
            raise UsageError(f"{where}: given names stage {g}, which no stage taught builds on ({users}): a "
                             f"given stage only supplies the code that a taught stage imports; remove {g} from given")
    for n in sorted(present):  # a stage whose code imports an earlier stage's cannot be graded without it
        for module in STAGES[n].builds_on:
            m = STAGE_OF[module]
            if m not in present:
                raise UsageError(f"{where}: stage {n} ({STAGES[n].module}.py) builds on stage {m} ({module}.py), which "
                                 f"the course neither teaches nor gives: a student's stage {n} imports stage {m}'s "
                                 f"code. Add {m} to stages to teach it, or to given (given = [{m}]) to ship the kit's "
                                 f"own stage {m} with the handout")
    return tuple(sorted(set(given)))


def _surprises(config, totals, own, untaught=()) -> tuple:
    """What the file says that its author may not expect: points of a stage not taught (a check's, or
    its total), a check set on its own in a stage whose total is set too (its points replace its share,
    so the stage no longer adds up to the total written), and checks that end at 0 points (failing
    them costs nothing)."""
    def not_taught(n):
        return f"stage {n}, which is given, not taught" if n in config.given else f"stage {n}, which is not taught"

    found = [f"[points] sets {k}, a check of {not_taught(registry()[k].stage)}: it changes nothing"
             for k in sorted(own) if registry()[k].stage not in config.stages]
    found += [f"[points] sets {k}, the total of {not_taught(int(k[5:]))}: it changes nothing" for k in untaught]
    checks = config.checks()
    for n, total in sorted(totals.items()):
        mine = sorted(k for k in own if registry()[k].stage == n)
        if mine:
            actual = config.max_points(n)
            found.append(f"[points] sets stage{n} = {total} and also {', '.join(f'{k} = {own[k]}' for k in mine)}: "
                         f"a check named on its own keeps its points on top of the others' shares of stage{n}, so "
                         + (f"stage {n} is worth {actual} points, not {total}" if actual != total
                            else f"stage {n} still comes to {total} points"))
    for n in config.stages:
        zero = [c.id for c in checks if c.stage == n and c.points == 0]
        set_so, shared_so = [k for k in zero if k in own], [k for k in zero if k not in own]
        why = ([f"set to 0 by [points]: {', '.join(set_so)}"] * bool(set_so)
               + [f"stage{n} = {totals.get(n)} shared among its {sum(c.stage == n for c in checks)} checks in "
                  f"proportion to their points leaves nothing to {', '.join(shared_so)}"] * bool(shared_so))
        if zero:
            found.append(f"{len(zero)} check(s) of stage {n} end at 0 points, so failing them costs nothing ("
                         + "; ".join(why) + ")")
    return tuple(found)


def given_code(config, stages=None, root: Path = KIT_ROOT) -> dict[str, str]:
    """module -> the kit's reference of each given module that grading ``stages`` imports, as a student
    who solved it would hand it in, under a comment that says it is given: the one text that the handouts
    ship and every grader imports. From ``solutions/`` in the kit's checkout, or from ``given/`` beside
    the package, where the Gradescope zip ships it. Raises GradingError where neither holds it."""
    found = {}
    for module in config.given_modules(stages):
        for path in (root / GIVEN / f"{module}.py", root / "solutions" / "attention_lab" / f"{module}.py"):
            if path.is_file():
                code = solved(path.read_text(encoding="utf-8"))
                found[module] = code if code.startswith(GIVEN_MARK) else _given_header(config, module) + code
                break
        else:
            raise GradingError(f"the course gives stage {STAGE_OF[module]}, and the kit's reference of it "
                               f"(solutions/attention_lab/{module}.py) is not here: grade from the kit's source "
                               "checkout, where solutions/ is")
    return found


GIVEN_MARK = "# Given in this course:"


def _given_header(config, module) -> str:
    users = ", ".join(map(str, config.users_of(STAGE_OF[module])))
    return (f"{GIVEN_MARK} stage {STAGE_OF[module]} is not taught, and this file is the kit's own code of it,\n"
            f"# which stage(s) {users} import. You do not write it; keep it as it is. Its docstring describes\n"
            "# the stage as the kit teaches it elsewhere: here nothing of it is graded.\n")


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
    # Imported here: only a TOML file needs it (the Gradescope zip ships its configuration as JSON), and
    # on Python 3.10 it needs tomli, which an environment built by hand may lack.
    from ..common import toml

    try:
        data = toml.loads(path.read_text(encoding="utf-8"))
    except (toml.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise UsageError(f"{path}: not a valid TOML file ({exc})") from None
    return from_data(data, path.resolve())


def effective_table(config) -> str:
    """What ``attention-lab config check`` prints: the stages taught and given, each taught stage's
    checks with their points (and the registry's, where the course changed them), the totals and the
    warnings."""
    lines = [f"course configuration: {config.path or f'none ({FILE} not found): the defaults'}",
             f"stages taught: {', '.join(map(str, config.stages))}"]
    for n in config.given:
        lines.append(f"given: stage {n} ({STAGES[n].module}.py), the kit's own code, imported by stage(s) "
                     f"{', '.join(map(str, config.users_of(n)))}; not graded, no notebook")
    if not config.given:
        lines.append("given: none")
    checks = config.checks()
    width = max(len(c.id) for c in checks)
    for n in config.stages:
        lines += ["", f"stage {n}: {STAGES[n].title} ({STAGES[n].module}.py)"]
        for c in (c for c in checks if c.stage == n):
            default = registry()[c.id].points
            changed = f"   (registry: {default})" if c.points != default else ""
            lines.append(f"  {c.id:<{width}}  {c.points:>3}{changed}")
        lines.append(f"  {'total':<{width}}  {config.max_points(n):>3}")
    lines += ["", f"course total: {config.max_points()} points in {len(checks)} checks"]
    lines += ["warnings:", *(f"  - {w}" for w in config.warnings)] if config.warnings else ["warnings: none"]
    return "\n".join(lines)
