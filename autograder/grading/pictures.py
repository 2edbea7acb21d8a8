"""Pictures of a student's own observations, for the report, Gradescope and nbgrader feedback.

A picture is drawn from what the student's code returned (``run.observations``) and from the
rule it must follow (the causal triangle, the scale of dropout), never from a hidden expected
value: where the reference's numbers are hidden, a picture shows the student's numbers and the
rule; only the book's printed examples, public already, are drawn beside the student's.

``draw(check, obs)`` gives the pictures of one check: a list, empty where a picture would say
nothing that the feedback does not.
"""
from __future__ import annotations

from functools import lru_cache

import torch

from ..probes.common import DROPOUT_P
from ..public.pictures import TOKENS, Picture, bars, heatmap, listing, weight_pictures
from .judging import LEAK_LIMIT, TOO_LITTLE, mask_problem
from .registry import declared

def observed_tensor(obs, *keys):
    """``obs[k1][k2]...`` when it is a tensor with values, else None (an error record, a list...)."""
    for key in keys:
        if not isinstance(obs, dict) or key not in obs:
            return None
        obs = obs[key]
    return obs if type(obs) is torch.Tensor and obs.numel() and obs.device.type != "meta" else None


def leak_map(obs, what, window=None) -> list[Picture]:
    """Which output position depends on which input position (the Jacobian's blocks), the future
    outlined (with a ``window``, also the inputs ``window`` or more positions back), and the cells
    where the student's layer leaks in red."""
    jac = observed_tensor(obs, "jacobian")
    if jac is None or jac.dim() != 2 or jac.shape[0] != jac.shape[1] or not bool(jac.isfinite().all()):
        return []
    n = jac.shape[0]
    future = torch.ones(n, n, dtype=torch.bool).triu(1)
    if window is not None:
        future |= torch.ones(n, n, dtype=torch.bool).tril(-window)
    top = float(jac.abs().max()) or 1.0
    leaking = future & (jac.abs() > LEAK_LIMIT * top)
    blind = torch.eye(n, dtype=torch.bool) & (jac.abs() <= LEAK_LIMIT * top)  # an output that ignores its own token
    if leaking.any():
        seen = "a later input" if window is None else "an input it must not see"
        note = f"red: output t depends on {seen} s ({int(leaking.sum())} cells); outlined cells must be 0"
    elif blind.any():
        note = (f"red: output t does not depend on its own input ({int(blind.sum())} of {n} positions on the "
                "diagonal); every output must depend on its own token")
    else:
        note = ("no output depends on a later input: the outlined future is all 0" if window is None else
                f"every output sees only its window of {window}: the outlined cells are all 0")
    leaking = leaking | blind
    return [heatmap(jac.abs(), [f"out {t}" for t in range(n)], [f"x {s}" for s in range(n)],
                    f"{what}: the leak map, |d out[t] / d x[s]|", forbidden=future, flagged=leaking, note=note,
                    row_axis="output", col_axis="input", kind="leak")]


def dropout_map(obs, what) -> list[Picture]:
    """The first sequence's attention weights in train mode, as multiples of the weight each
    visible token had before dropout (1/(t+1) in row t): 0 where dropped, 1/(1-p) where kept."""
    out = observed_tensor(obs, "out")
    if out is None or out.dim() != 3 or out.shape[-1] != out.shape[-2] + 1:
        return []
    T = out.shape[1]
    n = min(T, 16)  # enough rows to see the pattern
    ratio = (out[0, :n, :n].double() * torch.arange(1, n + 1, dtype=torch.float64).view(n, 1))
    future = torch.ones(n, n, dtype=torch.bool).triu(1)
    kept = ~future & (ratio != 0)
    scale = 1 / (1 - DROPOUT_P)
    seen = float(ratio[kept].median()) if kept.any() else 0.0
    dropped = float(1 - kept.sum() / (~future).sum())
    seen_future = bool((future & (ratio != 0) & ratio.isfinite()).any())
    # the judge's own words where the mask hides what it should not; too little is the red cells' to show
    problem = mask_problem(out[..., :T].double(), torch.ones(T, T, dtype=torch.bool).tril())
    hides = problem if problem != TOO_LITTLE else ""
    # kept, but not scaled by 1/(1-p); unreadable when the future is visible (the weights before dropout
    # are then not 1/(t+1): the mask is the bug, not the scale)
    misscaled = kept & ((ratio - scale).abs() > 1e-3 * scale) & (not seen_future)
    return [heatmap(ratio, list(range(n)), list(range(n)), f"{what}: dropout on the weights (p = {DROPOUT_P})",
                    forbidden=future, flagged=(future & (ratio != 0)) | misscaled, scale=max(scale, seen, 1e-9),
                    kind="dropout",
                    note=(hides if hides else
                          "red: weights in the future (above the diagonal) in train mode: the causal mask is "
                          "not applied, so the scale of the kept weights cannot be read" if seen_future else
                          f"white: dropped ({dropped:.0%} of the weights in these {n} rows; about {DROPOUT_P:.0%} "
                          f"should be); kept weights x{seen:.3f} their value before dropout (should be 1/(1-p) = "
                          f"{scale:.3f}); red: kept at another scale"))]


def cache_errors(obs, what) -> list[Picture]:
    """How far each position decoded with the cache is from the same layer's full forward."""
    steps, full = observed_tensor(obs, "steps", "out"), observed_tensor(obs, "full")
    if steps is None or full is None or steps.shape != full.shape or steps.dim() != 3:
        return []
    error = (steps.double() - full.double()).abs().amax(dim=(0, 2))
    return [bars(error, [str(t) for t in range(len(error))], f"{what}: decoded one token at a time vs the full forward",
                 limit=1e-4 * max(1.0, float(full.abs().max())), axis="position decoded", kind="cache",
                 note="each bar: the largest difference at that position; every bar should be ~0")]


def book_weights(obs, title, expected, causal) -> list[Picture]:
    weights = observed_tensor(obs, "book")
    if weights is None or weights.dim() != 2 or tuple(weights.shape) != tuple(expected.shape):
        return []
    return list(weight_pictures(weights, TOKENS, title, causal=causal, expected=expected))


def seen_weights(obs, title, causal) -> list[Picture]:
    weights = observed_tensor(obs, "weights")
    if weights is None or weights.dim() < 2 or weights.shape[-1] != weights.shape[-2]:
        return []
    return list(weight_pictures(weights, TOKENS, title, causal=causal))


def encoding_table(obs, what) -> list[Picture]:
    table = observed_tensor(obs, "table")
    if table is None or table.dim() != 3 or not bool(table.isfinite().all()):
        return []
    return [heatmap(table[0].double() + 1, list(range(table.shape[1])), list(range(table.shape[2])),
                    f"{what}: your positional-encoding table (+1, so that -1..1 reads 0..2)", scale=2.0,
                    note="rows: positions; columns: dimensions; sines and cosines of falling frequency",
                    row_axis="position", col_axis="dimension", kind="encoding")]


def kept_and_lost(obs, what, buffers=("mask",)) -> list[Picture]:
    """A state_dict check: which tensors were saved, and which of the ``buffers`` the contract names were not."""
    keys = obs.get("keys") if isinstance(obs, dict) else None
    if not isinstance(keys, list):
        return []
    saved = sorted(str(k) for k in keys)
    missing = [b for b in buffers if not any(k.split(".")[-1] == b for k in saved)]
    rows = [(k, True) for k in saved] + [(k, False) for k in missing]
    return [listing(rows, f"{what}: what the state_dict holds", "saved", "not saved: lost on reload", "state_dict")]


def moved_and_left(obs, what, buffers=()) -> list[Picture]:
    """A device check: which of the layer's tensors went to the device and which stayed behind
    (``.to()`` moves parameters and buffers, not plain tensor attributes), and which of the ``buffers``
    its contract names it does not hold at all."""
    reports = [obs] if isinstance(obs, dict) and "left_behind" in obs else (
        [dict(r, layer=name) for name, r in obs.items() if isinstance(r, dict) and "left_behind" in r]
        if isinstance(obs, dict) else [])
    rows = []
    for report in reports:
        layer = f"{report['layer']}." if "layer" in report else ""
        left = report.get("left_behind")
        stayed: list = left if isinstance(left, list) else []
        rows += [(f"{layer}{name}", False) for name in stayed]
        kept = report.get("buffers")
        for name, where in (kept.items() if isinstance(kept, dict) else ()):
            went = where.get("device") if isinstance(where, dict) else None
            if name not in stayed and went not in (None, "none"):
                rows.append((f"{layer}{name} (on {went})", went != "cpu"))
        held = kept if isinstance(kept, dict) else {}
        rows += [(f"{layer}{name} (not held)", False) for name in buffers if name not in held and name not in stayed]
    if not rows:
        return []
    return [listing(rows, f"{what}: what .to(device) moved", "moved", "stayed behind on the cpu", "device")]


def draw(check, obs) -> list[Picture]:
    """The pictures of ``check`` for the student's observation ``obs`` (of its probe, on cpu), as its stage
    declared them (``Checks.drawn``); none where it declared none."""
    how = _declared().get(check.probe)
    return how(obs) if how is not None else []


@lru_cache(maxsize=1)
def _declared() -> dict:
    """probe -> how to draw it, as every stage's module of checks declares it, gathered."""
    drawn: dict = {}
    for checks in declared().values():
        drawn.update(checks.drawn)
    return drawn
