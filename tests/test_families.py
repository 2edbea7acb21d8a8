"""The family checks for layers other than the kit's own (``grading.families``): the device family over the
buffers a layer's contract names, or none. The kit's stages keep theirs (a causal ``mask``), graded by the zoo;
these are layers of another kind: one of parameters alone, and one that keeps rotary tables."""
from __future__ import annotations

import pytest
import torch
import torch.nn as nn

from autograder.grading.families import layer
from autograder.grading.judging import check_device
from autograder.grading.registry import Checks, Fail
from autograder.paths import KIT_ROOT
from autograder.probes.common import Lab, device_report


class Plain(nn.Module):
    """Parameters alone: nothing the contract keeps as a buffer."""

    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(4, 4)

    def forward(self, x):
        return self.proj(x)


class Tables(Plain):
    """Rotary-style tables kept on the module, as buffers or (``registered=False``) as plain attributes."""

    def __init__(self, registered=True):
        super().__init__()
        cos = torch.cos(torch.arange(5.0))[:, None].expand(5, 4).clone()
        if registered:
            self.register_buffer("cos", cos)
        else:
            self.cos = cos

    def forward(self, x):
        return self.proj(x) * self.cos[: x.shape[1]]


def judged(module, buffers):
    """``module`` moved to meta and judged by the device family with the contract's ``buffers``."""
    report = device_report(Lab(KIT_ROOT / "solutions"), lambda: module, {}, "meta", 4)
    return check_device(report, "meta", type(module).__name__, buffers)


def test_a_layer_of_parameters_alone_moves_with_no_buffer_asked_of_it():
    judged(Plain(), ())
    with pytest.raises(Fail, match=r"Plain.mask is not a registered buffer"):  # a mask asked of it is missed
        judged(Plain(), ("mask",))


def test_a_layer_keeps_the_buffers_its_contract_names():
    judged(Tables(), ("cos",))
    with pytest.raises(Fail, match=r"Tables.cos is not a registered buffer, so .to\('meta'\) does not move it"):
        judged(Tables(registered=False), ("cos",))


def test_the_buffers_asked_come_from_the_contract_not_from_the_report():
    report = device_report(Lab(KIT_ROOT / "solutions"), lambda: Tables(), {}, "meta", 4)
    report["buffers"] = {}  # a child that says nothing of its buffers
    with pytest.raises(Fail, match="cos is not a registered buffer"):
        check_device(report, "meta", "Tables", ("cos",))


def test_the_family_title_names_the_buffers_or_none():
    checks = Checks(99)
    layer(checks, "s99.plain", "Plain", buffers=(), device=1)
    layer(checks, "s99.tables", "Tables", buffers=("cos", "sin"), device=1)
    layer(checks, "s99.causal", "Causal", device=1)
    assert [c.title for c in checks] == ["Plain moves to another device", "Tables moves to another device, cos and "
                                         "sin included", "Causal moves to another device, mask included"]


SCORES = [{"name": "3 queries, 4 keys", "inputs": {"queries": (3, 8), "keys": (4, 8)}, "dtypes": True},
          {"name": "a batch of 2", "inputs": {"queries": (2, 5, 8), "keys": (2, 7, 8)}}]


def scores_shape(case):
    return [*case["inputs"]["queries"][:-1], case["inputs"]["keys"][-2]]


def shapes_judged(fn):
    """The shape contract of ``fn``, a function of two tensors seen as a layer, measured and judged."""
    from autograder.grading.judging import check_shapes
    from autograder.probes.common import shape_reports

    reports = shape_reports(Lab(KIT_ROOT / "solutions"), lambda case: fn, SCORES, "cpu")
    return check_shapes({"reports": reports}, SCORES, scores_shape)


def test_a_function_of_several_tensors_has_a_shape_contract():
    shapes_judged(lambda q, k: q @ k.transpose(-2, -1))
    with pytest.raises(Fail, match=r"3 queries, 4 keys \(float32 input\): output shape is \(3, 8\), expected \(3, 4\)"):
        shapes_judged(lambda q, k: q @ torch.ones(q.shape[-1], q.shape[-1]))  # the keys never used
    with pytest.raises(Fail, match="output dtype is float64; it should follow the input's dtype"):
        shapes_judged(lambda q, k: (q @ k.transpose(-2, -1)).double())
    with pytest.raises(Fail, match="it modified its input keys in place; work on new tensors"):
        shapes_judged(lambda q, k: q @ k.mul_(2).transpose(-2, -1))


# --- the state_dict family over the buffer a contract names ------------------------------------------

class Persistent(Tables):
    """Tables kept as a buffer that the state_dict leaves out (``persistent=False``)."""

    def __init__(self):
        super().__init__(registered=False)
        cos = self.__dict__.pop("cos")
        self.register_buffer("cos", cos, persistent=False)


def saved_and_loaded(build):
    from autograder.grading.judging import check_state_dict
    from autograder.probes.common import state_dict_report

    check_state_dict(state_dict_report(build, "cpu", 4, buffer="cos", tokens=5), build().__class__.__name__, "cos")


def test_the_state_dict_family_saves_and_loads_the_buffer_the_contract_names():
    saved_and_loaded(Tables)
    with pytest.raises(Fail, match=r"Tables.state_dict\(\) has no 'cos'"):
        saved_and_loaded(lambda: Tables(registered=False))
    with pytest.raises(Fail, match=r"Persistent.state_dict\(\) has no 'cos'"):
        saved_and_loaded(Persistent)


def test_the_state_dict_family_asks_that_forward_uses_the_buffer():
    class Unused(Tables):
        def forward(self, x):
            return self.proj(x)

    with pytest.raises(Fail, match=r"changing every entry of Unused.cos did not change Unused's output: does "
                                   r"forward use self.cos\?"):
        saved_and_loaded(Unused)


class Indexed(Plain):
    """A buffer of indices (relative-distance buckets) into a learnt table: a change must stay in range."""

    def __init__(self):
        super().__init__()
        self.bias = nn.Embedding(5, 4)
        self.register_buffer("buckets", torch.arange(5))

    def forward(self, x):
        return self.proj(x) + self.bias(self.buckets[: x.shape[1]])


def test_the_state_dict_family_changes_an_index_buffer_within_its_range():
    from autograder.grading.judging import check_state_dict
    from autograder.probes.common import state_dict_report

    report = state_dict_report(Indexed, "cpu", 4, buffer="buckets", tokens=5)
    assert report["changed_buffer"].tolist() == [4, 3, 2, 1, 0]
    check_state_dict(report, "Indexed", "buckets")
    report["flipped_to"] = torch.ones(3)  # a child's word where the contract expects none: never read
    check_state_dict(report, "Indexed", "buckets")


def test_the_state_dict_family_is_declared_with_its_buffer():
    checks = Checks(99)
    layer(checks, "s99.tables", "Tables", buffers=("cos",), state_dict=1)
    assert [(c.id, c.probe, c.title) for c in checks] == [
        ("s99.tables.state_dict", "s99.tables.state_dict", "Tables's cos is saved and loaded with the state_dict "
                                                             "(across devices)")]


# --- dropout over an intermediate the probe shows -----------------------------------------------------

class Hidden(nn.Module):
    """A hidden layer with dropout on it: its output shows the intermediate (relu(x W)) itself."""

    def __init__(self, p, where="hidden"):
        super().__init__()
        self.proj, self.drop, self.where = nn.Linear(4, 8), nn.Dropout(p), where

    def forward(self, x):
        hidden = torch.relu(self.proj(x))
        return self.drop(hidden) if self.where == "hidden" else hidden * (1 - self.drop.p)


def dropout_judged(module):
    from autograder.grading.judging import check_dropout_of
    from autograder.probes.common import DROPOUT_P, dropout_pair

    check_dropout_of(dropout_pair(module, randn_x(), "cpu"), DROPOUT_P, "Hidden", "relu(x W)")


def randn_x():
    from autograder.probes.common import randn

    return randn(16, 32, 4, seed=5)


def test_the_dropout_family_judges_any_intermediate_against_the_layers_own_eval():
    from autograder.probes.common import DROPOUT_P

    dropout_judged(Hidden(DROPOUT_P))
    with pytest.raises(Fail, match=r"Hidden in train mode with dropout=0.2 zeroed nothing of relu\(x W\)"):
        dropout_judged(Hidden(0.0))
    with pytest.raises(Fail, match=r"should be scaled by exactly 1/\(1-p\) = 1.2500; .* about 2.0000"):
        dropout_judged(Hidden(0.5))  # p=0.5 where the contract's is 0.2
    with pytest.raises(Fail, match="zeroed nothing"):  # scaled by hand, never dropped
        dropout_judged(Hidden(DROPOUT_P, where="scaled"))


def test_the_dropout_family_of_an_intermediate_is_named_in_its_title():
    checks = Checks(99)
    layer(checks, "s99.hidden", "Hidden", buffers=(), intermediate="relu(x W)", dropout=1)
    layer(checks, "s99.causal", "Causal", dropout=1)
    assert [c.title for c in checks] == [
        "Hidden applies dropout (p=0.2) to relu(x W) in train mode, scaled by 1/(1-p)",
        "Causal dropout (p=0.2) acts on the attention weights, scaled by 1/(1-p)"]


# --- a function seen as a layer, and a seeded example from golden data ---------------------------------

def test_the_leak_report_measures_a_function_seen_as_a_layer():
    from autograder.grading.judging import check_leak
    from autograder.probes.common import leak_report

    def attend(x, causal=True):
        scores = x @ x.transpose(-2, -1)
        if causal:
            scores = scores.masked_fill(torch.ones(x.shape[1], x.shape[1]).triu(1).bool(), float("-inf"))
        return torch.softmax(scores, dim=-1) @ x

    check_leak(leak_report(attend, 4, 6, "cpu"), "attend")
    with pytest.raises(Fail):
        check_leak(leak_report(lambda x: attend(x, causal=False), 4, 6, "cpu"), "attend")


def test_a_seeded_example_from_golden_data_is_hidden_and_never_shows_the_numbers():
    from autograder.grading.families import seeded
    from autograder.grading.registry import Context

    checks = Checks(99)
    seeded(checks, "s99.plain", "Plain", 1, None, "Plain(4)(batch)")
    (check,) = checks
    assert check.visibility != "visible"
    assert check.title == "Plain reproduces the reference under torch.manual_seed(123)"
    expected = torch.arange(24.0).reshape(6, 4) / 10
    golden = {"out": torch.stack([expected, expected])}
    check.judge({"out": golden["out"].clone()}, Context(golden, "cpu"))
    with pytest.raises(Fail) as failed:
        check.judge({"out": golden["out"] + 0.01}, Context(golden, "cpu"))
    assert "Plain(4)(batch)[0]" in str(failed.value) and "2.3" not in str(failed.value)  # no expected value shown
