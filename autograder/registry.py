"""The one registry of checks: id, stage, points, title, probe and judge live together.

A check names the *probe* (trusted code that runs beside the student's code in the child
process and returns plain data) and supplies the *judge* (runs in the grading process and
compares that data with golden data or with properties). Points and feedback are declared
here and nowhere else; reports, Gradescope output and notebooks read them from ``REGISTRY``.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

# Devices a numeric check runs on. cuda is used when present and reported as not
# available otherwise; the points of a check never depend on which devices ran.
NUMERIC = ("cpu", "cuda")
CPU = ("cpu",)
MOVES = ("meta", "cuda")  # device movement: meta works on every machine, cuda when present

# Gradescope shows a check's result at once when it is VISIBLE, after grades are published
# otherwise. VISIBLE is for checks that the student's public self-checks already make on the same
# inputs (the book's seeded examples, the documented errors): seeing them reveals nothing hidden.
VISIBLE = "visible"


@dataclass(frozen=True)
class Stage:
    number: int
    module: str
    title: str
    teaches: str


STAGES = {
    s.number: s
    for s in (
        Stage(1, "simple", "attention without trainable weights",
              "dot-product scores, normalisation, softmax (and why it must be stabilised), context vectors"),
        Stage(2, "self_attention", "self-attention with trainable weights",
              "query/key/value projections, scaling by 1/sqrt(d_k), nn.Parameter vs nn.Linear"),
        Stage(3, "causal", "causal attention with dropout",
              "hiding future tokens two ways, batches, dropout on the attention weights"),
        Stage(4, "multihead", "multi-head attention",
              "stacked heads, splitting one projection into heads, out_proj, nn.MultiheadAttention"),
        Stage(5, "buffers", "buffers",
              "register_buffer: moving with .to(device) and persisting in the state_dict"),
        Stage(6, "practical", "self-attention as model code writes it",
              "a fused QKV projection, padding masks that never give nan, attention dropout, q/k/v/o projections"),
        Stage(7, "transformer", "Transformer encoder and decoder layers",
              "scaled dot-product attention, padding and subsequent masks, cross-attention, the feed-forward "
              "network, sinusoidal positions, post-norm residual sublayers, checked against PyTorch's own layers"),
        Stage(8, "modern", "attention as current models run it",
              "grouped-query and multi-query attention, a KV cache for decoding one token at a time, "
              "fast attention with F.scaled_dot_product_attention, graded on speed"),
    )
}


class Fail(Exception):
    """Raised by a judge: the message is the feedback a student reads."""


@dataclass(frozen=True)
class Check:
    id: str
    stage: int
    points: int
    title: str
    probe: str
    judge: Callable = field(compare=False, repr=False)
    devices: tuple = CPU
    visibility: str = "after_published"  # Gradescope: hidden until grades are published


REGISTRY: dict[str, Check] = {}


def check(id, *, stage, points, title, probe, devices=CPU, visibility="after_published"):
    """Register ``judge(obs, golden)`` as a check. It raises ``Fail`` with feedback, or returns
    (a string it returns is a line added to the passed check's feedback, such as a measured speed)."""

    def register(judge):
        if id in REGISTRY:
            raise ValueError(f"duplicate check id {id!r}")
        REGISTRY[id] = Check(id, stage, points, title, probe, judge, tuple(devices), visibility)
        return judge

    return register


def all_checks(stages=None):
    """Every registered check (importing the judge modules fills the registry), in stage order."""
    from . import checks  # noqa: F401  (registers on import)

    picked = [c for c in REGISTRY.values() if stages is None or c.stage in stages]
    return sorted(picked, key=lambda c: c.stage)


def max_points(stage=None):
    return sum(c.points for c in all_checks(None if stage is None else {stage}))
