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
