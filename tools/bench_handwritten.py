"""What the guard against library attention costs: ``python -m tools.bench_handwritten [--repeat N]``.

``confine.HandWritten`` is a function mode and a dispatch mode; the dispatch mode sends every aten
op through Python. This runs the probes that grading runs under it (those of stages 3, 4, 6 and 7
that may not use library attention, on the devices grading uses here) on the reference, in this
process, on one thread as a child does, three ways in turns: with no guard, with the function mode
alone, and with both. It prints, per stage, the median wall-clock milliseconds of one pass over its
probes, the aten ops a pass dispatches, and what the dispatch mode adds per pass and per op.
"""
from __future__ import annotations

import argparse
import contextlib
import os
import platform
import statistics
import sys
import time

import torch
from torch.overrides import TorchFunctionMode
from torch.utils._python_dispatch import TorchDispatchMode

from autograder import probes
from autograder.grading.grade import available_devices, plan
from autograder.grading.registry import all_checks
from autograder.paths import KIT_ROOT
from autograder.sandbox.confine import HandWritten

STAGES = (3, 4, 6, 7)


class FunctionModeOnly(HandWritten):
    """HandWritten as it was before the dispatch mode: the function mode alone."""

    def __enter__(self):
        return TorchFunctionMode.__enter__(self)

    def __exit__(self, *exc):
        return TorchFunctionMode.__exit__(self, *exc)


class CountOps(TorchDispatchMode):
    def __init__(self):
        super().__init__()
        self.count = 0

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        self.count += 1
        return func(*args, **(kwargs or {}))


GUARDS = {"none": contextlib.nullcontext, "function mode": FunctionModeOnly, "function + dispatch": HandWritten}


def tasks(stage):
    table = probes.load()
    return [t for t in plan(all_checks({stage}), available_devices())
            if t.kind == "probe" and not table[t.name].library_attention]


def one_pass(lab, stage_tasks, guard):
    """Every probe once, set up as a child sets up each task; the guard's verdict is checked."""
    table = probes.load()
    for task in stage_tasks:
        torch.manual_seed(0)
        torch.set_default_dtype(torch.float32)
        hand = guard()
        with torch.enable_grad(), hand:
            result = lab.attempt(table[task.name].fn, lab, task.device)
        if isinstance(hand, HandWritten) and hand.used:
            raise SystemExit(f"the reference's {task.name} was refused: it uses {hand.used}")
        if isinstance(result, dict) and "error" in result:
            raise SystemExit(f"the reference's {task.name} failed: {result['error']}")


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeat", type=int, default=7)
    args = parser.parse_args(argv)
    torch.set_num_threads(1)  # as in a child
    print(f"torch {torch.__version__}, Python {platform.python_version()}, {platform.machine()}, "
          f"{os.cpu_count()} CPUs, one thread, devices {sorted(available_devices())}, {args.repeat} runs")
    sys.path.append(str(KIT_ROOT / "solutions"))  # the submission, last on the path, as in a child
    lab = probes.Lab(KIT_ROOT / "solutions")
    print("| stage | probes | aten ops | none (ms) | function mode (ms) | function + dispatch (ms) "
          "| dispatch adds | per op |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- |")
    totals = dict.fromkeys(GUARDS, 0.0)
    for stage in STAGES:
        stage_tasks = tasks(stage)
        for guard in GUARDS.values():  # warm up: imports, first-call caches
            one_pass(lab, stage_tasks, guard)
        with CountOps() as counted:
            one_pass(lab, stage_tasks, contextlib.nullcontext)
        times = {name: [] for name in GUARDS}
        for _ in range(args.repeat):  # in turns, so that a drift of the machine hits all alike
            for name, guard in GUARDS.items():
                start = time.perf_counter()
                one_pass(lab, stage_tasks, guard)
                times[name].append(time.perf_counter() - start)
        ms = {name: statistics.median(t) * 1000 for name, t in times.items()}
        for name in GUARDS:
            totals[name] += ms[name]
        added = ms["function + dispatch"] - ms["function mode"]
        print(f"| {stage} | {len(stage_tasks)} | {counted.count} | {ms['none']:.0f} | {ms['function mode']:.0f} "
              f"| {ms['function + dispatch']:.0f} | {added:+.0f} ms ({added / ms['function mode']:+.0%}) "
              f"| {added * 1000 / counted.count:.1f} µs |")
    added = totals["function + dispatch"] - totals["function mode"]
    print(f"| all | | | {totals['none']:.0f} | {totals['function mode']:.0f} | {totals['function + dispatch']:.0f} "
          f"| {added:+.0f} ms ({added / totals['function mode']:+.0%}) | |")


if __name__ == "__main__":
    main()
