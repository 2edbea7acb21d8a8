"""Shared fixtures of the kit's own tests."""
import importlib
import os
import shutil
import sys
import zlib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent

# The suite runs a test per core (pytest-xdist), and each grades in children of its own. torch's
# default of one thread per core in each of them has threads wait on each other and spin on cores
# another test needs; one thread each (inherited by every process the tests start) does the same
# work for less CPU. The speed check times single-threaded runs anyway.
os.environ.setdefault("OMP_NUM_THREADS", "1")

# A test that forks and whose child raises before its os._exit would go on as a second copy of the test
# process: under pytest-xdist, two processes then talk on one worker's channel, and the controller
# drops the worker ("node down: Not properly terminated"). Whatever a forked child does, it never
# comes back into pytest: the first hook it would reach ends it.
TEST_PROCESS = os.getpid()


def _end_a_stray_fork():
    if os.getpid() != TEST_PROCESS:
        os._exit(70)  # EX_SOFTWARE: a forked child of a test (or a fixture) got out of it


# Hypothesis is here for the kit's own tests; a course's environment has none. Its pytest plugin, which
# every pytest loads where it is installed, costs each run 0.5 s of 2: the pytest runs these tests start
# (the public checks in a notebook's kernel, a classroom step, a handout) run without it, as students'.
WITHOUT_HYPOTHESIS = "-p no:hypothesispytest"


@pytest.fixture(scope="session", autouse=True)
def _started_pytest_runs_without_hypothesis():
    """Set inside each test process once its own options are read: only the runs it starts see it."""
    before = os.environ.get("PYTEST_ADDOPTS")
    os.environ["PYTEST_ADDOPTS"] = f"{before or ''} {WITHOUT_HYPOTHESIS}".strip()
    yield
    if before is None:
        del os.environ["PYTEST_ADDOPTS"]
    else:
        os.environ["PYTEST_ADDOPTS"] = before


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_setup(item):
    yield
    _end_a_stray_fork()


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_call(item):
    yield
    _end_a_stray_fork()


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_teardown(item):
    yield
    _end_a_stray_fork()


@pytest.fixture(scope="session")
def root():
    return ROOT


@pytest.fixture
def make_submission(tmp_path):
    """A copy of the reference in a fresh folder; ``edit(module, text)`` appends or replaces code."""

    def make(**modules):
        pkg = tmp_path / "sub" / "attention_lab"
        shutil.copytree(ROOT / "solutions" / "attention_lab", pkg)
        for name, text in modules.items():
            (pkg / f"{name}.py").write_text(text)
        return pkg.parent

    return make


@pytest.fixture(scope="session")
def ref():
    """The reference modules of every stage, imported in this process: {module name: module}."""
    from autograder.curriculum import STAGES

    sys.path.insert(0, str(ROOT / "solutions"))
    try:
        for name in [m for m in sys.modules if m == "attention_lab" or m.startswith("attention_lab.")]:
            del sys.modules[name]
        pkg = importlib.import_module("attention_lab")
        assert Path(pkg.__file__).parent == ROOT / "solutions" / "attention_lab"
        return {s.module: importlib.import_module(f"attention_lab.{s.module}") for s in STAGES.values()}
    finally:
        sys.path.remove(str(ROOT / "solutions"))


@pytest.fixture(scope="session")
def grading_server():
    """One fork server for the tests whose point is a verdict, its feedback or its pictures, not how a
    grading starts: each grading is still a child of its own, forked as a class's are by grade-all, without
    a new Python and a fresh torch import each (about 2 s a grading on two cores). How ``grade`` starts its
    own server is what the command-line tests, the isolation tests, the load tests and the bench run."""
    from autograder.sandbox.forkserver import ForkServer

    with ForkServer(meta=True) as started:
        yield started


@pytest.fixture(scope="session")
def reference_observations():
    """What every probe the registry uses returns for the reference, on cpu and meta: {Task: observation}."""
    from autograder.grading.grade import plan, run_plan
    from autograder.grading.registry import all_checks
    from autograder.intake.submission import open_submission

    return run_plan(open_submission(ROOT / "solutions"), plan(all_checks(), {"cpu", "meta"})).observations


# The longest units of work first. The suite runs on every core (pytest-xdist, --dist loadscope):
# each module (or class; the zoos in parts, see DEALT) goes whole to one worker, so one of these
# minutes-long units started last would leave the other workers idle while it runs alone.
LONGEST_FIRST = ("test_nbgrader.py", "test_zoo_hostile.py::TestAsRoot", "test_zoo_hostile.py::TestAsUser",
                 "test_zoo.py", "test_degenerate_zoo.py", "test_grade_all.py", "test_classroom.py")


def pytest_collection_modifyitems(config, items):
    def rank(item):
        return next((i for i, unit in enumerate(LONGEST_FIRST) if unit in item.nodeid), len(LONGEST_FIRST))

    for item in items:  # the same units are the slow end-to-end runs a developer may skip locally
        if rank(item) < len(LONGEST_FIRST):
            item.add_marker(pytest.mark.slow)
        stage = stage_of(item)
        if stage is not None:
            item.add_marker(f"stage{stage}")
    items.sort(key=rank)  # stable: within a unit, and for the rest, the order stays as collected


def stage_of(item):
    """The stage a test of one stage is about (``-m stageN`` runs them: ``python -m tools.stage_tests N``), by
    its parameters: a zoo entry (its ``MODULE``), a module's name, a check, or a stage; None for the rest."""
    from autograder.curriculum import STAGE_OF, Stage
    from autograder.grading.registry import Check

    params = getattr(getattr(item, "callspec", None), "params", {})
    for value in params.values():
        if isinstance(value, Check):
            return value.stage
        if isinstance(value, Stage):
            return value.number
    if isinstance(params.get("path"), Path) and params["path"].is_relative_to(ROOT / "tests" / "zoo"):
        from tools.zoo import read_entry

        return STAGE_OF.get(read_entry(params["path"])["MODULE"])
    if params.get("module") in STAGE_OF:
        return STAGE_OF[params["module"]]
    stage = params.get("stage")
    return stage if isinstance(stage, int) and not isinstance(stage, bool) else None


# Where one module's parametrized tests are hundreds of independent gradings, its module going whole to
# one worker outlasts everything else on a machine of many cores: on a 16-core GPU machine, where every
# grading runs on both devices, test_zoo.py's 591 tests would hold one worker for about 24 minutes. Their
# entries are dealt by name into units of their own (at least two per worker); entries of one unit that
# follow each other on a worker still share its fork server (grading_server).
DEALT = ("tests/test_zoo.py", "tests/test_degenerate_zoo.py", "tests/test_zoo_hostile.py")


def work_unit(nodeid: str, scope: str, units: int) -> str:
    """The unit of work (pytest-xdist's loadscope ``scope``) a test goes to: its module or class, or, for a
    parametrized test of ``DEALT``, one of ``units`` parts of it chosen by the test's name."""
    if "[" not in nodeid or not scope.startswith(DEALT):
        return scope
    return f"{scope}::{nodeid.split('::')[-1].split('[')[0]}#{zlib.crc32(nodeid.encode()) % units}"


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config, log):
    """loadscope with the zoos dealt across the workers (``work_unit``); every other way to distribute is
    xdist's own."""
    if config.getvalue("dist") != "loadscope":
        return None
    from xdist.scheduler import LoadScopeScheduling

    class ZoosDealt(LoadScopeScheduling):
        def _split_scope(self, nodeid):  # xdist's documented point of change (its loadfile overrides it too)
            return work_unit(nodeid, super()._split_scope(nodeid), 2 * self.numnodes)

    return ZoosDealt(config, log)


def pytest_configure(config):
    from autograder.curriculum import STAGES

    for number in STAGES:  # the markers of one stage's tests (``stage_of``)
        config.addinivalue_line("markers", f"stage{number}: the tests of stage {number} alone")
    # CI sets ATTENTION_LAB_ISOLATION_TESTS=required and must run everything: no skipping the slow runs.
    if os.environ.get("ATTENTION_LAB_ISOLATION_TESTS") == "required" and "slow" in (config.option.markexpr or ""):
        raise pytest.UsageError("CI runs every test: -m must not leave out the slow end-to-end runs")


BROWSER_REQUIRED = os.environ.get("ATTENTION_LAB_BROWSER_TESTS") == "required"


def browser_unavailable(why):
    """Skip a browser test, or fail it where CI requires the browser (ATTENTION_LAB_BROWSER_TESTS=required)."""
    if BROWSER_REQUIRED:
        pytest.fail(f"the browser test is required here, but {why}")
    pytest.skip(why)


@pytest.fixture(scope="module")
def browser():
    """Headless Chromium (Debian's), driven by Playwright: never Playwright's own browser download."""
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        browser_unavailable("playwright is not installed (pip install -e '.[test]')")
    from tools.report_screenshots import chromium

    path = chromium()
    if path is None:
        browser_unavailable("no chromium on this machine (apt-get install chromium)")
    with sync_playwright() as p:
        launched = p.chromium.launch(executable_path=path, args=["--no-sandbox"])
        yield launched
        launched.close()
