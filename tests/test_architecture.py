"""The house's layout holds what it promises: the runtime package is what is shipped and
fingerprinted, and the import paths that existing nbgrader courses use keep working. (The zones'
import contracts are checked by `lint-imports`, which CI runs before the tests.)"""
import hashlib
import importlib

from autograder.curriculum import STAGES
from autograder.delivery.classrun.grade_all import kit_fingerprint
from autograder.paths import KIT_PACKAGE, KIT_ROOT, runtime_files


def test_the_runtime_package_is_the_package_and_nothing_of_the_tools_or_tests():
    files = runtime_files()
    assert files and all(p.is_relative_to(KIT_PACKAGE) for p in files)
    names = {p.relative_to(KIT_ROOT).as_posix() for p in files}
    assert "autograder/grading/golden/golden.pt" in names and "autograder/grading/golden/forms.json" in names
    assert not [n for n in names if "bench" in n or "zoo" in n or "__pycache__" in n]


def test_the_kit_fingerprint_covers_exactly_the_runtime_package():
    digest = hashlib.sha256()
    for p in runtime_files():
        digest.update(str(p.relative_to(KIT_PACKAGE)).encode() + b"\0" + p.read_bytes() + b"\0")
    assert kit_fingerprint() == digest.hexdigest()


def test_the_top_of_the_package_holds_the_command_the_shared_facts_and_the_two_shims():
    """Everything else lives in the zone it belongs to (docs/architecture.md): at most six modules here."""
    top = sorted(p.stem for p in KIT_PACKAGE.glob("*.py") if p.stem != "__init__")
    assert top == ["cli", "curriculum", "errors", "gradecell", "paths", "release_guard"], top


def test_the_paths_existing_courses_import_still_work():
    assert importlib.import_module("autograder.gradecell").check.__module__ == "autograder.delivery.nbgrader.gradecell"
    guard = importlib.import_module("autograder.release_guard").ReleaseGuard
    assert guard.__module__ == "autograder.delivery.nbgrader.release_guard"


def test_checks_and_probes_are_gathered_by_a_call_not_registered_by_importing():
    from autograder import probes
    from autograder.grading import registry

    for stage in STAGES:
        module = importlib.import_module(f"autograder.grading.checks.stage{stage}")
        assert module.CHECKS and all(c.stage == stage for c in module.CHECKS)
    assert len(registry.registry()) == sum(len(importlib.import_module(f"autograder.grading.checks.stage{s}").CHECKS)
                                           for s in STAGES)
    assert {c.probe for c in registry.all_checks()} <= set(probes.load())
