"""What torch, builtins and the kit's own modules looked like: a snapshot, and what changed since.

The child takes one before any student code runs and compares after every task (a submission that
patches ``torch.allclose``, a probe, or leaves a torch mode on is caught, and the change undone);
stage 8's speed probe compares between two timed calls. Only torch and the standard library here.
"""
from __future__ import annotations

import builtins
import operator
import sys
from typing import Any

import torch


def _watched() -> list[Any]:
    import io
    import json
    import os
    import select

    import numpy  # noqa: F401  (torch imports it; students may compare with numpy.testing)

    # os, json, io and select: what the child's own loop reads its requests and answers with (it keeps its
    # own references, taken before any student code ran; a change to them is tampering all the same).
    owners = [builtins, torch, torch.Tensor, torch._C.TensorBase, torch.nn.functional, torch.nn.Module,
              torch.testing, torch.autograd, torch.autograd.functional, sys.modules.get("numpy.testing"),
              os, json, io, select]
    owners += [m for name, m in sys.modules.items() if name.split(".")[0] == "autograder"]
    return [o for o in owners if o is not None]


def _label(owner: object, name: str) -> str:
    return f"{getattr(owner, '__name__', type(owner).__name__)}.{name}"


def describe_changes(changed: list[str]) -> str:
    """What ``Watch.changes()`` found, as words: "changed torch.allclose and left a TorchFunctionMode active"."""
    modes = [c for c in dict.fromkeys(changed) if c.endswith(" left active")]
    names = [c for c in dict.fromkeys(changed) if c not in modes][:3]
    did = ([f"changed {', '.join(names)}"] if names else []) + [f"left {m.removesuffix(' left active')} active"
                                                              for m in modes]
    return " and ".join(did)


class Watch:
    """What torch, builtins and the probes looked like before the submission was imported."""

    def __init__(self) -> None:
        self.owners = _watched()
        self.saved = [(o, dict(vars(o))) for o in self.owners]
        # A class may gain harmless caches (copyreg's __slotnames__ on the first torch.save);
        # a new entry counts only if it shadows something the class already had.
        self.had = {id(o): set(dir(o)) for o in self.owners if isinstance(o, type)}
        self.clean = [_looks(o) for o in self.owners]  # each owner as last found unchanged

    def changes(self) -> list[str]:
        """Undo every change to a watched name; return the names that were changed."""
        changed: list[str] = []
        for i, (owner, saved) in enumerate(self.saved):
            now = vars(owner)
            names, values = self.clean[i]
            if len(now) == len(names) and tuple(now) == names and all(map(operator.is_, now.values(), values)):
                continue  # the same names holding the same objects: nothing to compare one by one
            for name, value in saved.items():
                if now.get(name, _MISSING) is not value:
                    changed.append(_label(owner, name))
                    setattr(owner, name, value)
            if isinstance(owner, type):  # a class that gained a method now shadows the real one
                for name in [n for n in now if n not in saved and n in self.had[id(owner)]]:
                    changed.append(_label(owner, name))
                    delattr(owner, name)
            self.clean[i] = _looks(owner)
        while torch._C._len_torch_function_stack() > 0:
            torch._C._pop_torch_function_stack()
            changed.append("a TorchFunctionMode left active")
        while torch._C._len_torch_dispatch_stack() > 0:
            torch._C._pop_torch_dispatch_stack()
            changed.append("a TorchDispatchMode left active")
        return changed


_MISSING = object()


def _looks(owner: object) -> tuple[tuple[str, ...], tuple[object, ...]]:
    """An owner's names and the objects they hold, compared again in one pass (``operator.is_``; not
    ``id``, which raises an audit event for the child's hook at each call): comparing every saved name
    one by one took 1.5 ms after each of 171 tasks."""
    return tuple(vars(owner)), tuple(vars(owner).values())
