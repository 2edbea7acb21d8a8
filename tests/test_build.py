"""The build: stubs and the public checks' helper come from solutions/; golden data from the reference."""
import pytest

import torch

from autograder.authoring.build import drift, golden_drift, planned_files
from autograder.curriculum import STAGES
from autograder.errors import BuildError
from autograder.grading.registry import all_checks, max_points
from autograder.common.markers import strip_solutions


def test_committed_files_match_a_fresh_build(root):
    problems = drift(root)
    assert not problems, "run `attention-lab build` and commit:\n" + "\n".join(problems)


def test_golden_drift_forgives_another_cpus_last_bits_but_not_a_change():
    stored = {"logits": torch.linspace(-12.0, 12.0, 81)}
    ulps = stored["logits"] + 4 * torch.finfo(torch.float32).eps * 12.0 * torch.tensor([(-1.0) ** i for i in range(81)])
    assert golden_drift({"logits": ulps}, stored) == []
    changed = stored["logits"].clone()
    changed[40] += 1e-3
    assert golden_drift({"logits": changed}, stored) == ["golden.logits: the reference now computes other numbers"]
    assert golden_drift({"tokens": torch.tensor([1, 2])}, {"tokens": torch.tensor([1, 3])}) != []


def test_stubs_hold_no_solution_code(root):
    for path, content in planned_files(root).items():
        if path.parent.name == "attention_lab":
            text = content.decode()
            assert "BEGIN SOLUTION" not in text and "END SOLUTION" not in text
            assert "raise NotImplementedError()" in text or path.name == "__init__.py"


def test_every_stage_module_has_a_stub(root):
    stubs = {p.name for p in planned_files(root) if p.parent.name == "attention_lab"}
    assert {f"{s.module}.py" for s in STAGES.values()} <= stubs


def test_strip_keeps_indent_and_hints():
    src = "def f(x):\n    # TODO: double it\n    ### BEGIN SOLUTION\n    return 2 * x\n    ### END SOLUTION\n"
    assert strip_solutions(src) == (
        "def f(x):\n    # TODO: double it\n    # YOUR CODE HERE\n    raise NotImplementedError()\n")


def test_strip_drops_hidden_tests():
    src = "a = 1\n### BEGIN HIDDEN TESTS\nassert a == 1\n### END HIDDEN TESTS\nb = 2\n"
    assert strip_solutions(src) == "a = 1\nb = 2\n"


@pytest.mark.parametrize("src, message", [
    ("def f():\n    ### BEGIN SOLUTION\n    pass\n", "never closed"),
    ("def f():\n    ### END SOLUTION\n", "without its BEGIN"),
    ("### BEGIN SOLUTION\nx = 1\n### END SOLUTION\n", "module level"),
    ("def f():\n    ### BEGIN SOLUTION\n    ### BEGIN SOLUTION\n", "inside the region"),
])
def test_strip_rejects_malformed_markers(src, message):
    with pytest.raises(BuildError, match=message):
        strip_solutions(src, "x.py")


def test_registry_is_consistent():
    from autograder.probes import load

    PROBES = load()

    checks = all_checks()
    assert len({c.id for c in checks}) == len(checks)
    for c in checks:
        assert c.probe in PROBES, f"{c.id} names unknown probe {c.probe}"
        assert c.points > 0 and c.stage in STAGES and c.title
        assert c.id.startswith(f"s{c.stage}."), c.id
    assert max_points() == sum(max_points(s) for s in STAGES)
    for s in STAGES:
        assert max_points(s) > 0
