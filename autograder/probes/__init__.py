"""Probes: trusted code of the kit that runs *beside* the student's code, in the child process.

A probe calls the submission and returns plain data only (tensors of exact type
``torch.Tensor``, numbers, strings, bools, lists and dicts of these). It never decides
whether something is right: that is the judges' job, in the grading process.

Probe modules import torch, the standard library and ``autograder.public``, nothing else of the
kit. A child imports this package by name (``sandbox.protocol.PROBES``) and uses ``load``,
``Lab`` and ``attempt``.
"""
import importlib
import pkgutil
import re
from functools import lru_cache

from .common import Lab  # noqa: F401  (what a child uses, with load)


def _stage_modules():
    """This package's ``stage<N>`` modules, in stage order. Found by name, not listed: a stage adds its
    module and nothing here (the curriculum, which names the stages, is not imported beside student code)."""
    numbers = sorted(int(m.group(1)) for info in pkgutil.iter_modules(__path__)
                     if (m := re.fullmatch(r"stage(\d+)", info.name)))
    return tuple(importlib.import_module(f"{__name__}.stage{n}") for n in numbers)


MODULES = _stage_modules()


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
