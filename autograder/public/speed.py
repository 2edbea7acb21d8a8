"""How stage 8 times ``FastMultiHeadAttention``: one measurement for the hidden grader, the
public self-check and the benchmark.

The student's layer and the kit's fast reference (``fast_attention``) get the same weights and
the same inputs, and are timed in turns in one process, which goes first alternating between
rounds; the verdict is the median of the rounds' ratios. Timing in turns cancels slow drifts of
the machine (another program, a warm or cold cache); the median ignores the odd round that an
interruption spoilt. The rounds stop once a majority of them lies on one side of the limit: the
rest could not move the median across it. Only torch here: the build copies this file beside the
public checks.
"""
from __future__ import annotations

import gc
import statistics
import time
from collections.abc import Callable
from typing import Any, TypedDict

import torch
import torch.nn.functional as F

# Long enough that attention, not the projections, takes most of the time, and that the fused
# causal kernel is several times faster than stage 4's layer; small enough for a 2-core CPU.
SIZE = {"batch": 1, "tokens": 2048, "width": 256, "heads": 4}
LIMIT = 1.2  # the student's time over the kit's
ROUNDS = 9
# One thread: timings that do not depend on the machine's cores, and no parallel kernel left
# waiting for a thread that the grader's own watchdog (or anything else) took off a core. With
# two threads on two cores, the same code timed against itself came out up to 1.2 times slower.
THREADS = 1
BUDGET_S = 2.0  # a slow layer ends the rounds early (after at least one)
AGAIN_BELOW = 2 * LIMIT  # a ratio above LIMIT but below this is a near miss: raced again
RACES = 3  # at most, a near miss included: the best counts (two still failed the reference once on a loaded CI)
RACING_S = 6.0  # ... and another race only if, at the pace so far, it ends within this (the task timeout is 10 s)


def fast_attention(x: torch.Tensor, qkv_weight: torch.Tensor, qkv_bias: torch.Tensor | None, out_weight: torch.Tensor,
                   out_bias: torch.Tensor | None, num_heads: int) -> torch.Tensor:
    """Causal multi-head attention as fast as PyTorch runs it: one fused projection, one call of
    ``F.scaled_dot_product_attention`` with ``is_causal=True``. The kit's fast reference."""
    # Tensor.unflatten is a Python method of torch's without annotations
    queries, keys, values = F.linear(x, qkv_weight, qkv_bias).unflatten(-1, (3, num_heads, -1)).permute(2, 0, 3, 1, 4)  # type: ignore[no-untyped-call]
    context = F.scaled_dot_product_attention(queries, keys, values, is_causal=True)
    return F.linear(context.transpose(1, 2).flatten(2), out_weight, out_bias)


class Unfit(Exception):
    """The student's output cannot be compared with the reference's: no timing counts."""


class Rounds(TypedDict):
    """One race's measurements: seconds per round (the student's wall-clock and CPU, the kit's
    wall-clock), how far the outputs were apart, and the threads they ran on."""
    student_s: list[float]
    kit_s: list[float]
    student_cpu_s: list[float]
    max_diff: float
    scale: float
    threads: int


class Report(Rounds, total=False):
    """What ``race`` returns: its best race's rounds, and how many races were run (1 where absent)."""
    races: int


def _randn(*shape: int, seed: int, scale: float = 1.0) -> torch.Tensor:
    return torch.randn(*shape, generator=torch.Generator().manual_seed(seed)) * scale


def weights() -> dict[str, torch.Tensor]:
    """The timed layer's weights, by parameter name (``qkv`` without a bias, ``out_proj`` with one)."""
    d = SIZE["width"]
    return {"qkv.weight": _randn(3 * d, d, seed=870, scale=d ** -0.5),
            "out_proj.weight": _randn(d, d, seed=871, scale=d ** -0.5), "out_proj.bias": _randn(d, seed=872, scale=0.1)}


def race(forward: Callable[[torch.Tensor], object], device: str = "cpu",
         between: Callable[[], object] | None = None) -> Report:
    """Time ``forward`` (the student's layer, holding ``weights()``) against ``fast_attention``.

    ``between()`` runs before the student's first call and around every timed call: the grader
    checks there that nothing the kit's reference relies on was changed by the student's call.
    Returns plain data: the wall-clock seconds of each round for both, the CPU seconds of the
    student's calls (more than one core's worth means threads the grader did not allow), and how
    far the outputs were apart.
    """
    threads, collecting = torch.get_num_threads(), gc.isenabled()
    try:
        torch.set_num_threads(min(threads, THREADS))
        with torch.no_grad():
            between = between or (lambda: None)
            started = time.perf_counter()
            races = [_rounds(forward, device, between)]
            # A near miss is raced again and the best race counts: a burst of other work on the
            # machine (a busy laptop, a loaded CI runner) must not fail a layer that is fast enough,
            # and a layer that is really slower stays slower in every race.
            while len(races) < RACES and LIMIT < min(map(_race_ratio, races)) < AGAIN_BELOW and (
                    (time.perf_counter() - started) * (len(races) + 1) / len(races) < RACING_S):
                races.append(_rounds(forward, device, between))
            return {**min(races, key=_race_ratio), "races": len(races)}
    finally:
        torch.set_num_threads(threads)
        if collecting:
            gc.enable()


def _race_ratio(report: Rounds) -> float:
    """The race's ratio, or infinity where it cannot be read (nothing timed): the worst of races."""
    return median_ratio(report) if report["student_s"] and min(report["kit_s"]) > 0 else float("inf")


def _rounds(forward: Callable[[torch.Tensor], object], device: str, between: Callable[[], object]) -> Rounds:
    w = {name: t.to(device) for name, t in weights().items()}

    def kit(x: torch.Tensor) -> torch.Tensor:
        return fast_attention(x, w["qkv.weight"], None, w["out_proj.weight"], w["out_proj.bias"], SIZE["heads"])

    def timed(fn: Callable[[torch.Tensor], Any], x: torch.Tensor) -> tuple[float, float, Any]:
        start, cpu = time.perf_counter(), time.process_time()
        out = fn(x.clone())
        if device == "cuda":
            torch.cuda.synchronize()
        return time.perf_counter() - start, time.process_time() - cpu, out

    shape = (SIZE["batch"], SIZE["tokens"], SIZE["width"])
    xs = [_randn(*shape, seed=880 + i).to(device) for i in range(ROUNDS + 1)]
    kit(xs[0])  # warm-up: first calls allocate memory and pick kernels
    between()  # before the student's first call: whatever that call starts, the grader sees
    forward(xs[0].clone())
    gc.disable()  # no collection runs during the rounds (none before them either: with torch loaded one takes 0.1 s)
    report: Rounds = {"student_s": [], "kit_s": [], "student_cpu_s": [], "max_diff": 0.0, "scale": 0.0,
                      "threads": torch.get_num_threads()}
    for i, x in enumerate(xs[1:]):
        runs: dict[str, tuple[float, float, Any]] = {}  # the student's output is anything until checked below
        for who in ("kit", "student") if i % 2 == 0 else ("student", "kit"):
            between()
            runs[who] = timed(kit if who == "kit" else forward, x)
        between()
        theirs, ours = runs["student"][2], runs["kit"][2]
        if type(theirs) is not torch.Tensor or theirs.shape != ours.shape or theirs.dtype != ours.dtype:
            raise Unfit(f"the output of forward should be a plain torch.Tensor of shape {tuple(ours.shape)} "
                        f"and dtype {ours.dtype}")
        report["max_diff"] = max(report["max_diff"], float((theirs.detach() - ours).abs().max()))
        report["scale"] = max(report["scale"], float(ours.abs().max()))
        report["student_s"].append(runs["student"][0])
        report["student_cpu_s"].append(runs["student"][1])
        report["kit_s"].append(runs["kit"][0])
        if sum(report["student_s"]) > BUDGET_S or settled(report):
            break
    return report


def settled(report: Rounds) -> bool:
    """Do a majority of the ``ROUNDS`` lie on one side of ``LIMIT`` already? Then the median of all of
    them would lie there too, whatever the rest measured: a fast layer is done in 5 rounds, not 9."""
    ratios = [s / k for s, k in zip(report["student_s"], report["kit_s"])]
    fast = sum(r <= LIMIT for r in ratios)
    return max(fast, len(ratios) - fast) > ROUNDS // 2


def _why_fewer(report: Rounds, rounds: int) -> str:
    if rounds == ROUNDS:
        return ""
    if settled(report):
        return f", which settled it: the other {ROUNDS - rounds} could not change the verdict"
    return ", cut short"


def median_ratio(report: Rounds) -> float:
    """The median over the rounds of the student's time over the kit's: the speed the verdict judges."""
    return statistics.median(s / k for s, k in zip(report["student_s"], report["kit_s"]))


def verdict(report: Report) -> tuple[bool, str]:
    """``(passed, text)``: the measurement in words, for a pass as for a failure."""
    size = (f"batch {SIZE['batch']}, {SIZE['tokens']} tokens, {SIZE['width']} wide, {SIZE['heads']} heads, "
            f"{report['threads']} thread{'s' if report['threads'] > 1 else ''}")
    rounds = len(report["student_s"])
    times = report["student_s"] + report["kit_s"]
    if not rounds or {len(report["kit_s"]), len(report["student_cpu_s"])} != {rounds} or not min(times) > 0:
        return False, f"FastMultiHeadAttention ({size}) could not be timed: no round of the race was completed"
    if not report["max_diff"] <= 1e-4 + 1e-3 * report["scale"]:
        return False, (f"FastMultiHeadAttention ({size}) differs from the kit's reference by up to "
                       f"{report['max_diff']:.3g} on the timed inputs; speed counts only for correct outputs")
    cores = statistics.median(c / s for c, s in zip(report["student_cpu_s"], report["student_s"]))
    if cores > report["threads"] + 0.3:
        return False, (f"FastMultiHeadAttention ({size}) kept {cores:.1f} cores busy while being timed, on "
                       f"{report['threads']} thread{'s' if report['threads'] > 1 else ''}: something in it runs "
                       "more threads than the grader set (torch.set_num_threads, a thread of its own), so the "
                       "timing does not count")
    ratio = median_ratio(report)
    races = report.get("races", 1)
    again = f", the best of {races} races: the first was a near miss" if races > 1 else ""
    timing = (f"{statistics.median(report['student_s']) * 1e3:.1f} ms per forward against the kit's "
              f"{statistics.median(report['kit_s']) * 1e3:.1f} ms: {ratio:.2f} times as long (median of {rounds} "
              f"round{'s' if rounds > 1 else ''}{_why_fewer(report, rounds)}{again}; {size})")
    if ratio <= LIMIT:
        return True, timing
    return False, (f"FastMultiHeadAttention is too slow: {timing}; at most {LIMIT} is allowed. Usual causes: an "
                   "attn_mask tensor instead of is_causal=True (the kernel can no longer skip the blocks above the "
                   "diagonal), attention computed by hand instead of by F.scaled_dot_product_attention, three "
                   "projections instead of the fused qkv, or extra copies of the heads")
