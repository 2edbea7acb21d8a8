"""Probes: trusted code of the kit that runs *beside* the student's code, in the child process.

A probe calls the submission and returns plain data only (tensors of exact type
``torch.Tensor``, numbers, strings, bools, lists and dicts of these). It never decides
whether something is right: that is the judges' job, in the grading process.

Probe modules import torch, the standard library and ``autograder.public``, nothing else of the
kit. A child imports this package by name (``sandbox.protocol.PROBES``) and uses ``load``,
``Lab`` and ``attempt``.
"""
from functools import lru_cache

from . import stage1, stage2, stage3, stage4, stage5, stage6, stage7, stage8, stage9, stage10
from .common import Lab, attempt  # noqa: F401  (what a child uses, with load)

MODULES = (stage1, stage2, stage3, stage4, stage5, stage6, stage7, stage8, stage9, stage10)


@lru_cache(maxsize=1)
def load() -> dict:
    """Every probe, name -> ``common.Probe``: what each stage's module declares, gathered."""
    found: dict = {}
    for module in MODULES:
        twice = set(found) & set(module.PROBES)
        if twice:
            raise ValueError(f"probes declared twice: {sorted(twice)}")
        found.update(module.PROBES)
    return found
