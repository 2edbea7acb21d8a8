"""Probes: trusted code of the kit that runs *beside* the student's code, in the child process.

A probe calls the submission and returns plain data only (tensors of exact type
``torch.Tensor``, numbers, strings, bools, lists and dicts of these). It never decides
whether something is right: that is the judges' job, in the grading process.

Probe modules import nothing from the grading side of the kit.
"""
from .common import PROBES, Lab, probe  # noqa: F401
from . import stage1, stage2, stage3, stage4, stage5, stage6, stage7, stage8  # noqa: F401  (register the probes)
