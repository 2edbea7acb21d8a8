"""The degenerate zoo, made by code: for every function and class of the contract, a submission in
which that one callable (a class: its forward) returns zeros, nan, None, a list, float64, or half
of its elements. Each is graded like any submission: no grader error may come of it, and each must
lose points, except where float64 keeps them for a reason written down here.
"""
import pytest
import torch

from autograder.curriculum import STAGE_OF, stages_using
from autograder.grading.grade import grade
from autograder.grading.results import ERROR
from tools.zoo import DEGENERATIONS, assemble_degenerate, graded_callables

CALLABLES = graded_callables()
CASES = [(module, name, kind, how) for module, name, kind in CALLABLES for how in DEGENERATIONS]

# float64 results that keep every point, and why that is right. A layer's output must keep its
# input's dtype (a float64 layer breaks the float32 layers after it), so every class loses points;
# so does a function whose float64 result breaks the function or layer that calls it.
SAME_NUMBERS = "its contract fixes the values, not the dtype, and nothing of the kit's builds on it"
FLOAT64_KEEPS = {
    **{name: SAME_NUMBERS for name in ("attention_scores_loop", "attention_scores", "normalize_by_sum",
                                       "softmax_naive", "softmax_stable", "context_vector", "context_vectors_all",
                                       "attend_one_query", "causal_weights_by_multiplication",
                                       "causal_weights_by_fill")},
    "count_parameters": "2360064.0 is the right count; a count as a float is still that number",
    "rope_tables": "the tables' values are the contract; apply_rope casts them to the dtype of what it rotates",
    "kv_cache_bytes": "131072.0 bytes are 131072 bytes; a count as a float is still that number",
    "train_steps": "its contract is a list of Python floats, and a Python float is float64 already",
}


def test_every_callable_of_every_stage_is_covered():
    stages = {module for module, _, _ in CALLABLES}
    assert stages == set(STAGE_OF) and len(CALLABLES) >= 42, CALLABLES
    assert set(FLOAT64_KEEPS) <= {name for _, name, _ in CALLABLES}


@pytest.mark.parametrize("module, name, kind, how", CASES, ids=[f"{n}-{h}" for _, n, _, h in CASES])
def test_degenerate_submission(module, name, kind, how, tmp_path, grading_server):
    graded = grade(assemble_degenerate(module, name, kind, how, tmp_path), stages=stages_using(module),
                   server=grading_server)
    errors = [r.id for r in graded.results if r.status == ERROR]
    assert not errors, f"{name} returning {how}: the grader failed on {errors}:\n" + "\n".join(
        trace for _, _, trace in graded.grader_errors)
    score, top = sum(r.points for r in graded.results), sum(r.max_points for r in graded.results)
    if how == "float64" and name in FLOAT64_KEEPS:
        lost = {r.id: r.feedback for r in graded.results if not r.passed}
        assert not lost, f"{name} returning float64 keeps its points ({FLOAT64_KEEPS[name]}), but lost {lost}"
    else:
        assert score < top, f"{name} returning {how} got full marks ({score}/{top})"
        for r in graded.results:
            assert r.passed or r.feedback.strip(), f"{r.id} failed without saying why"


def test_a_class_that_is_not_a_layer_degenerates_through_what_returns_it(tmp_path):
    """A NamedTuple state has no forward to wrap: wrapping one would break the import, and every case
    would then "lose points" without testing anything. It is left out of the callables, and a function
    that returns it degenerates field by field, still a NamedTuple."""
    (tmp_path / "cache.py").write_text(
        "from typing import NamedTuple\nimport torch\nimport torch.nn as nn\n\n\n"
        "class State(NamedTuple):\n    keys: torch.Tensor\n    length: int\n\n\n"
        "class Layer(nn.Module):\n    pass\n\n\nclass Deeper(Layer):\n    pass\n\n\n"
        "def start(keys):\n    return State(keys, 3)\n")
    assert graded_callables(tmp_path, modules=["cache"]) == [
        ("cache", "Layer", "class"), ("cache", "Deeper", "class"), ("cache", "start", "function")]
    from tools.zoo import degenerate_fragment

    space: dict = {}
    exec((tmp_path / "cache.py").read_text() + degenerate_fragment("start", "function", "zeros"), space)
    state = space["start"](torch.ones(2))
    assert type(state).__name__ == "State" and state.keys.tolist() == [0.0, 0.0] and state.length == 0
