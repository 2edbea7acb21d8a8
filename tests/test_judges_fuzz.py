"""Every judge, fed what the reference's own probes returned, mutated the ways a student's code (or
a broken probe) can mutate it, must give a pass or a fail with a message: never a grader error.

The observations are real: the reference graded once on cpu and meta (``reference_observations``).
Hypothesis picks places in one and mutates them: a tensor becomes zeros, a constant, nan, ±inf,
empty, another dtype, one dimension fewer or more, transposed, huge, None or a list; a number or a
string becomes something else; a dict loses a key or gains one; anything may become an error
record. Examples come from a fixed seed (``derandomize``), so CI sees the same ones every run.
"""
import copy

import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from autograder.grading.golden import load_golden
from autograder.grading.grade import judge
from autograder.grading.registry import all_checks
from autograder.grading.results import ERROR, FAILED
from autograder.public.feedback import problem
from autograder.sandbox.protocol import Task

EXAMPLES = 30  # per check and device; every judge together takes about a minute on two cores

CASES = [(c, d) for c in all_checks() for d in c.devices if d in ("cpu", "meta")]


def _float(t):
    return t if t.is_floating_point() else t.double()


TENSOR = {
    "zeros": lambda t, x: torch.zeros_like(t),
    "constant": lambda t, x: torch.full_like(_float(t), x),
    "nan": lambda t, x: torch.full_like(_float(t), float("nan")),
    "one nan": lambda t, x: _float(t).clone().flatten().index_fill(0, torch.tensor([0]), float("nan")).view(t.shape)
    if t.numel() else t,
    "+inf": lambda t, x: torch.full_like(_float(t), float("inf")),
    "-inf": lambda t, x: torch.full_like(_float(t), float("-inf")),
    "huge": lambda t, x: _float(t) * 1e30 + 1e30,
    "negated": lambda t, x: -_float(t),
    "empty": lambda t, x: t.reshape(-1)[:0],
    "empty rows": lambda t, x: t[:0] if t.dim() else t.reshape(-1)[:0],
    "float64": lambda t, x: t.double(),
    "float16": lambda t, x: t.half(),
    "int64": lambda t, x: t.long(),
    "bool": lambda t, x: t.bool(),
    "one dim fewer": lambda t, x: t[0] if t.dim() and t.shape[0] else t.reshape(-1),
    "one dim more": lambda t, x: t.unsqueeze(0),
    "last dim more": lambda t, x: t.unsqueeze(-1),
    "transposed": lambda t, x: t.mT if t.dim() >= 2 else t.flip(0) if t.dim() else t,
    "scalar": lambda t, x: _float(t).sum(),
    "half of it": lambda t, x: t.reshape(-1)[: t.numel() // 2],
    "None": lambda t, x: None,
    "list": lambda t, x: t.tolist(),
    "a number": lambda t, x: x,
}
OTHER = {
    "None": lambda v, x: None,
    "a tensor": lambda v, x: torch.full((2, 3), x),
    "a text": lambda v, x: "nonsense",
    "a number": lambda v, x: x,
    "True": lambda v, x: True,
    "an empty list": lambda v, x: [],
    "a list": lambda v, x: [v, v],
}
CONTAINER = {
    "one key fewer": lambda v, x: dict(list(v.items())[1:]) if isinstance(v, dict) else v[1:],
    "one key more": lambda v, x: {**v, "unexpected": x} if isinstance(v, dict) else [*v, x],
    "emptied": lambda v, x: type(v)(),
}
ANYWHERE = {
    "an error record": lambda v, x: {"error": problem("RuntimeError", "raised in the student's code")},
}
NUMBERS = st.sampled_from([0.0, 1.0, -3.5, 0.5, 1e6, -1e30, float("nan"), 7])


def places(obs, path=()):
    """Every node of an observation, as a path of keys and indices from its root."""
    yield path
    if type(obs) is dict:
        for k, v in obs.items():
            yield from places(v, path + (k,))
    elif type(obs) in (list, tuple):
        for i, v in enumerate(obs):
            yield from places(v, path + (i,))


def mutate(obs, path, change):
    """``obs`` with the node at ``path`` replaced by ``change(node)`` (the root too)."""
    if not path:
        return change(obs)
    parent = obs
    for step in path[:-1]:
        parent = parent[step]
    if type(parent) is tuple:  # probes return lists, but be safe
        raise AssertionError("tuples are not plain data here")
    parent[path[-1]] = change(parent[path[-1]])
    return obs


def node(obs, path):
    for step in path:
        obs = obs[step]
    return obs


def mutations(value):
    """The mutations that apply to a node like ``value``: name -> f(value, x)."""
    kinds = dict(ANYWHERE)
    kinds.update(TENSOR if type(value) is torch.Tensor else CONTAINER if type(value) in (dict, list) else OTHER)
    kinds.update({f"({name})": f for name, f in OTHER.items() if type(value) in (dict, list)})
    return kinds


def every_single_mutation(obs):
    """(what was done, the mutated copy) for each node of ``obs`` and each mutation of it, in turn."""
    for path in places(obs):
        for name, change in mutations(node(obs, path)).items():
            yield f"{name} at {list(path)}", mutate(copy.deepcopy(obs), path, lambda v: change(v, 7))


@st.composite
def mutated(draw, obs):
    """A deep copy of ``obs`` with one to three of its nodes mutated; leaves are drawn as often as
    the inner nodes together, so that the values a student's code makes are mutated most."""
    obs = copy.deepcopy(obs)
    for _ in range(draw(st.integers(1, 3))):
        paths = list(places(obs))
        leaves = [p for p in paths if type(node(obs, p)) not in (dict, list)] or paths
        path = draw(st.sampled_from(leaves) | st.sampled_from(paths))
        kinds = mutations(node(obs, path))
        how, x = draw(st.sampled_from(sorted(kinds))), draw(NUMBERS)
        obs = mutate(obs, path, lambda v: kinds[how](v, x))
    return obs


@pytest.fixture(scope="module")
def golden():
    return load_golden()


def expect_verdict(check, device, obs, golden, what):
    verdict = judge(check, obs, golden.get(check.probe), device)
    assert verdict.status != ERROR, f"{check.id} on {device}, {what}: the judge raised\n{verdict.trace}"
    if verdict.status == FAILED:
        assert isinstance(verdict.text, str) and verdict.text.strip(), f"{check.id}, {what}: a fail says why"


@pytest.mark.parametrize("check, device", CASES, ids=[f"{c.id}@{d}" for c, d in CASES])
def test_every_single_mutation(check, device, reference_observations, golden):
    original = reference_observations[Task("probe", check.probe, device)]
    expect_verdict(check, device, original, golden, "the reference's own observation")
    for what, obs in every_single_mutation(original):
        expect_verdict(check, device, obs, golden, what)


@pytest.mark.parametrize("check, device", CASES, ids=[f"{c.id}@{d}" for c, d in CASES])
def test_mutations_together(check, device, reference_observations, golden):
    original = reference_observations[Task("probe", check.probe, device)]

    @settings(max_examples=EXAMPLES, derandomize=True, deadline=None, database=None,
              suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
    @given(mutated(original))
    def judged(obs):
        expect_verdict(check, device, obs, golden, "mutated in several places")

    judged()
