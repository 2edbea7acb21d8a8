"""The hidden checks as pytest items::

    python -m pytest -p autograder.delivery.pytest_plugin --submission=PATH [--stage N] [--config FILE]
                     [-k ...] [-m stage3] [-x] [--junit-xml out.xml]

(``docs/instructors/grade.md``; ``--submission=PATH`` in one word, from a folder outside the
submission, so that pytest reads no configuration of the submission's before this plugin loads.)

Why: LMS and CI graders read junit-xml, and editors show a tree of tests; both speak pytest, not
the kit's table. Here every registered check of the stages graded is one test item, named by its
check id (``-k no_leak``), marked ``stage{N}`` (``-m stage3``), with its points in the item's
``user_properties`` (junit-xml carries them as properties).

The verdicts are the isolated grader's (``grading.grade.grade``: the submission runs in a confined
child, and only plain data comes back), graded once per session, at the first check that runs, so
``--collect-only`` runs nothing. An item only reports its verdict: no submission code ever runs in
the pytest process. So nothing is collected from the working folder, and no ``conftest.py`` is
loaded at all: a submission's could otherwise turn every failure into a pass, or drop the checks.

Without ``--submission`` the plugin does nothing: loaded by accident, it changes no run.
"""
from __future__ import annotations

from pathlib import Path

import pytest

from ..curriculum import STAGES
from ..errors import GradingError, SubmissionError, UsageError
from ..grading.config import load_config
from ..grading.results import ERROR, GRADER_ERROR, PASSED

NAME = "attention-lab"  # the collector's name and node id: junit-xml's classname of every check


def pytest_addoption(parser):
    group = parser.getgroup(NAME, "attention-lab: the hidden checks as test items")
    group.addoption("--submission", metavar="PATH", help="grade PATH (any submission `attention-lab grade` "
                    "accepts) and collect one test item per check; nothing else is collected")
    group.addoption("--stage", type=int, action="append", choices=sorted(STAGES), metavar="N",
                    dest="attention_lab_stages", help="only the checks of stage N (repeatable; default: the stages "
                    "the course configuration names)")
    group.addoption("--config", metavar="FILE", dest="attention_lab_config", help="the course configuration "
                    "(default: $ATTENTION_LAB_CONFIG, else attention-lab.toml in the working folder)")


@pytest.hookimpl(tryfirst=True)
def pytest_load_initial_conftests(early_config):
    # Before pytest's own implementation (trylast) reads this flag to load the initial conftests; it
    # also keeps every later conftest out. A -p plugin is imported, and its options parsed, before this hook.
    if getattr(early_config.known_args_namespace, "submission", None):
        early_config.known_args_namespace.noconftest = True


def pytest_configure(config):
    if not config.getoption("submission"):
        return
    # pytest reads its ini file (addopts, pythonpath, -p) before any plugin is loaded, looking in the folder
    # of the first word that is no option: with `--submission PATH`, PATH itself. One read from the
    # submission may have deselected checks or imported its code here: refuse to report any verdict.
    submission = Path(config.getoption("submission")).resolve()
    if config.inipath is not None and submission in Path(config.inipath).resolve().parents:
        raise pytest.UsageError(f"pytest read its configuration from the submission ({config.inipath}), which may "
                                "change what runs: run pytest from a folder outside the submission, and write "
                                "--submission=PATH as one word so that pytest does not look for one in PATH")
    for number, stage in STAGES.items():
        config.addinivalue_line("markers", f"stage{number}: stage {number}, {stage.title} ({stage.module}.py)")
    config.pluginmanager.register(HiddenChecks(config), f"{NAME}-checks")


class HiddenChecks:
    """The session's checks and their verdicts, graded once, when the first check runs."""

    def __init__(self, config):
        try:
            self.course = load_config(config.getoption("attention_lab_config"))
        except UsageError as exc:
            raise pytest.UsageError(str(exc)) from None
        stages = config.getoption("attention_lab_stages")
        self.stages = sorted(set(stages)) if stages else list(self.course.stages)
        self.submission = config.getoption("submission")
        self.config = config
        self.items = []  # the checks selected
        self.graded = None
        self.verdicts = {}  # check id -> CheckResult
        self.not_graded = None  # the submission cannot be graded: every check fails with this
        self.grader_down = None  # the grader could not run: every check errors with this
        self.started = False

    def pytest_report_header(self):
        return [self.course.describe(), *(f"warning: {w}" for w in self.course.warnings)]

    @pytest.hookimpl(tryfirst=True)
    def pytest_collection(self, session):
        # Only the checks: nothing of the working folder (the kit's tests, a submission's files) is collected.
        parent = Submission.from_parent(session, name=NAME, path=Path(self.submission).absolute(), nodeid=NAME)
        session.items = list(session.genitems(parent))  # the collect hooks, as pytest's own collection calls them
        hook = session.config.hook
        try:
            hook.pytest_collection_modifyitems(session=session, config=session.config, items=session.items)
        finally:
            hook.pytest_collection_finish(session=session)
        session.testscollected = len(session.items)
        self.items = [item for item in session.items if isinstance(item, CheckItem)]
        return True

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtest_protocol(self, item):
        if isinstance(item, CheckItem):
            self.grade_once()  # here, outside the item's output capture, so the line below reaches the terminal

    def grade_once(self):
        if self.started:
            return
        self.started = True
        from ..grading.grade import grade  # torch and the sandbox: only once a check runs

        stages = sorted({item.check.stage for item in self.items})  # the selected ones, as `grade --stage` would
        self.say(f"{NAME}: grading {self.submission} (stage(s) {', '.join(map(str, stages))}) in the isolated "
                 "grader ...")
        try:
            self.graded = grade(self.submission, stages=set(stages), config=self.course)
        except SubmissionError as exc:
            self.not_graded = str(exc)
        except GradingError as exc:
            self.grader_down = f"grading failed, not the submission's fault: {exc}"
        except Exception as exc:  # noqa: BLE001  (a bug of the kit: an error on every check, never INTERNALERROR)
            self.grader_down = f"grading failed, not the submission's fault: {type(exc).__name__}: {exc}"
        else:
            self.verdicts = {r.id: r for r in self.graded.results}

    def say(self, line):
        reporter = self.config.pluginmanager.get_plugin("terminalreporter")
        if reporter is not None:
            reporter.write_line(line)

    def pytest_terminal_summary(self, terminalreporter):
        if not self.started:
            return
        checks = [item.check for item in self.items]
        total = sum(c.points for c in checks)
        if self.grader_down:
            terminalreporter.write_line(f"{NAME}: not graded: {self.grader_down}")
            return
        points = sum(self.verdicts[c.id].points for c in checks if c.id in self.verdicts)
        line = f"{NAME}: {points}/{total} points"
        if self.graded:
            passed = sum(self.verdicts[c.id].passed for c in checks if c.id in self.verdicts)
            line += f", {passed}/{len(checks)} checks passed, graded in {self.graded.seconds:.1f} s"
        terminalreporter.write_line(line + (f": {self.not_graded}" if self.not_graded else ""))
        for note in self.graded.notes if self.graded else []:
            terminalreporter.write_line(f"note: {note}")
        for check_id, device, trace in self.graded.grader_errors if self.graded else []:  # for the instructor
            terminalreporter.write_line(f"{NAME}: grader error in {check_id} on {device} (a bug of the kit, not "
                                        f"the submission):\n{trace}")


class Submission(pytest.Collector):
    """The submission graded; its children are the checks of the stages graded."""

    def collect(self):
        plugin = self.config.pluginmanager.get_plugin(f"{NAME}-checks")
        for check in plugin.course.checks(plugin.stages):
            yield CheckItem.from_parent(self, name=check.id, check=check, plugin=plugin)


class CheckItem(pytest.Item):
    """One check: it reports the isolated grader's verdict, and runs nothing of the submission."""

    def __init__(self, *, check, plugin, **kwargs):
        super().__init__(**kwargs)
        self.check, self.plugin = check, plugin
        self.add_marker(f"stage{check.stage}")
        self.user_properties += [("stage", check.stage), ("max_points", check.points)]

    def setup(self):
        plugin = self.plugin
        plugin.grade_once()
        verdict = plugin.verdicts.get(self.check.id)
        self.user_properties.append(("points", verdict.points if verdict else 0))
        if plugin.grader_down:
            pytest.fail(plugin.grader_down, pytrace=False)  # in setup: reported as an error, not a failure

    def runtest(self):
        if self.plugin.not_graded:
            pytest.fail(self.plugin.not_graded, pytrace=False)
        verdict = self.plugin.verdicts.get(self.check.id)
        if verdict is None:
            pytest.fail(f"no verdict came back for this check: {GRADER_ERROR}", pytrace=False)
        if verdict.status == PASSED:
            return
        said = GRADER_ERROR if verdict.status == ERROR else verdict.feedback
        pytest.fail(f"{said}\n(0/{self.check.points} points)", pytrace=False)

    def reportinfo(self):
        # The heading of a failure. Not the check id alone: pytest would print a domain that ends the
        # node id with its dots as "::".
        return self.path, None, f"{self.check.id}: {self.check.title}"
