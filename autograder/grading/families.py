"""The checks every layer of a kind gets, the same way (it must not leak the future, its dropout acts on
the attention weights, eval mode is deterministic, it moves to another device, its buffers survive the
state_dict, gradients reach every parameter):
declared once here, and given to a layer in one line, ``layer(CHECKS, prefix, name, ...)``."""
from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Callable

from ..probes.common import DROPOUT_P
from .pictures import dropout_map, kept_and_lost, leak_map, moved_and_left
from .judging import (check_device, check_dropout, check_dropout_of, check_eval, check_gradients, check_leak,
                      check_shapes, check_state_dict, expect_seeded, get)
from .registry import MOVES, NUMERIC, VISIBLE, Checks


@dataclass(frozen=True)
class Family:
    """A check every layer of its kind gets, the same way: the last part of its probe's name (the probe
    module's ``<prefix>.<probe>``), its usual title (``{name}``: the layer's class; ``{p}``: the dropout
    probability of the probes), its devices, its judge, ``judge(obs, ctx, name)``, and its picture of the
    student's observation, ``draw(obs, name)``, where one says more than the feedback."""
    probe: str
    title: str
    judge: Callable
    devices: tuple = NUMERIC
    draw: Callable | None = None
    takes: tuple = ()  # what of the layer's contract its judge and picture take: "buffers", "intermediate"


# The families, by the name each gives its check (``<prefix>.<family>``).
FAMILIES = {
    "no_leak": Family("leak", "{name} never lets a token see a later token",
                      lambda obs, ctx, name: check_leak(obs, name), draw=leak_map),
    "dropout": Family("dropout", "{name} dropout (p={p}) acts on the attention weights, scaled by 1/(1-p)",
                      lambda obs, ctx, name: check_dropout(get(obs, "out"), DROPOUT_P, name), draw=dropout_map),
    "eval": Family("eval", "{name} in eval mode is deterministic and equals dropout=0",
                   lambda obs, ctx, name: check_eval(obs, name)),
    "device": Family("device", "{name} moves to another device{buffers}",
                     lambda obs, ctx, name, buffers: check_device(obs, ctx.device, name, buffers), devices=MOVES,
                     draw=moved_and_left, takes=("buffers",)),
    "state_dict": Family("state_dict", "{name}'s {buffer} is saved and loaded with the state_dict (across devices)",
                         lambda obs, ctx, name, buffers: check_state_dict(obs, name, buffers[0]), draw=kept_and_lost,
                         takes=("buffers",)),
    "gradients": Family("gradients", "gradients reach every parameter of {name}",
                        lambda obs, ctx, name: check_gradients(obs, name)),
}


# The dropout family of a layer whose probe shows another intermediate than causal attention weights
# (``layer(..., intermediate=...)``): judged against the same layer's own output in eval mode.
DROPOUT_OF = Family("dropout", "{name} applies dropout (p={p}) to {intermediate} in train mode, scaled by 1/(1-p)",
                    lambda obs, ctx, name, intermediate: check_dropout_of(obs, DROPOUT_P, name, intermediate),
                    takes=("intermediate",))


def layer(checks: Checks, prefix: str, name: str, titles: dict | None = None, buffers: tuple = ("mask",),
          intermediate: str | None = None, **points: int) -> None:
    """Declare on ``checks`` the family checks of one layer (``name``, its class): ``points`` gives each
    family declared its points, in the order they are listed (``no_leak=2, dropout=2, eval=1``), as check
    ``<prefix>.<family>`` of probe ``<prefix>.<the family's probe>``; ``titles`` replaces a family's
    usual title where this layer's says more. ``buffers``: the tensors the layer's contract keeps as
    buffers, by name, which the device family requires on the device (its probe's ``device_report``
    reports every tensor the module holds), and whose first the state_dict family changes, saves and loads
    (its probe's ``state_dict_report``, given the same name); none for a layer of parameters alone.
    ``intermediate``: what the dropout family's probe shows, where it is not the causal attention weights
    that ``dropout_weights`` makes visible (``"x + pe"``; its probe: ``common.dropout_pair``)."""
    moved = f", {' and '.join(buffers)} included" if buffers else ""
    for family, worth in points.items():
        kind = DROPOUT_OF if family == "dropout" and intermediate else FAMILIES[family]
        title = (titles or {}).get(family) or kind.title.format(
            name=name, p=DROPOUT_P, buffers=moved, buffer=" and ".join(buffers), intermediate=intermediate)
        contract = {key: given for key, given in (("buffers", tuple(buffers)), ("intermediate", intermediate))
                    if key in kind.takes}
        judge = functools.partial(kind.judge, name=name, **contract)
        checks.add(f"{prefix}.{family}", points=worth, probe=f"{prefix}.{kind.probe}", devices=kind.devices,
                   title=title)(judge)
        if kind.draw is not None:  # a stage's own way to draw the probe (``Checks.pictures``) comes first
            checks.drawn.setdefault(f"{prefix}.{kind.probe}", functools.partial(kind.draw, what=name, **contract))


def d_out_wide(cfg):
    """The output of a layer that projects to ``d_out``: (batch, tokens, d_out)."""
    return [cfg["x"][0], cfg["x"][1], cfg["d_out"]]


def like_x(cfg):
    """The output of a layer that keeps its input's width: x's shape."""
    return list(cfg["x"])


def shape_contract(checks: Checks, prefix: str, points: int, configs, out: Callable, title: str) -> None:
    """Declare on ``checks`` the shape contract of one layer, ``<prefix>.shapes``: on each of the probe's
    ``configs`` (its module's), the output has the shape ``out(config)`` and x's dtype and device, and x
    is untouched."""
    checks.add(f"{prefix}.shapes", points=points, probe=f"{prefix}.shapes", devices=NUMERIC,
               title=title)(lambda obs, ctx: check_shapes(obs, configs, out))


BOOK_ORDER = ("W_query", "W_key", "W_value", "out_proj")  # the order in which the book's layers draw them


def seeded(checks: Checks, prefix: str, name: str, points: int, printed, call: str, seed: int = 123,
           batch: bool = True, owns_widths: bool = False) -> None:
    """Declare on ``checks`` a layer's example under a fixed seed, ``<prefix>.seeded``: made right after
    ``torch.manual_seed(seed)`` (by the probe) and called on the book's batch (or its inputs: ``batch=False``),
    it gives the expected output, and weights drawn in another order are named as the cause (``owns_widths``:
    see ``judging.expect_seeded``).

    The expected output is the book's ``printed`` one, shown at once (``VISIBLE``) because the book printed
    it; or, with ``printed=None``, the reference's own output from golden data (the probe declared
    ``golden=True``), which a student cannot see elsewhere, so the check stays hidden until release and its
    feedback never shows the expected numbers."""
    if printed is None:
        def judge(obs, ctx):
            expected = get(ctx.golden, "out")
            expect_seeded(obs, expected[0] if batch else expected, call, seed, BOOK_ORDER, batch, owns_widths,
                          public=False)
        visibility = {}
    else:
        def judge(obs, ctx):
            expect_seeded(obs, printed, call, seed, BOOK_ORDER, batch, owns_widths)
        visibility = {"visibility": VISIBLE}
    checks.add(f"{prefix}.seeded", points=points, probe=f"{prefix}.seeded", devices=NUMERIC, **visibility,
               title=f"{name} reproduces {'the book' if printed is not None else 'the reference'} under "
                     f"torch.manual_seed({seed})")(judge)
