"""The slowest probes and judges on the reference: ``python -m tools.profile_checks [--top N]``.

Each probe the course's checks use runs here, in this process, on the reference (``solutions/``),
exactly as a grading child runs it (the same seed, dtype and dispatcher-level check), and each check's
judge on what it returned: the table lists the ``N`` slowest of each, with the best of ``--repeat``
runs (the first run also pays for lazy imports, which a child has done before its first task). Use it
to find where a grading's time goes after its fixed cost; `python -m tools.bench` times whole gradings.
"""
from __future__ import annotations

import argparse
import contextlib
import sys
import time

import torch

from autograder import probes
from autograder.grading.golden import load_golden
from autograder.grading.grade import judge, plan
from autograder.grading.registry import all_checks
from autograder.paths import KIT_ROOT
from autograder.sandbox import confine
from autograder.sandbox.child import exact_float32


def timed_probes(tasks, repeat):
    """{task: (best seconds, observation)} for the probe tasks, run as a child runs them."""
    sys.path.append(str(KIT_ROOT / "solutions"))  # where a child finds the submission: last
    table, lab = probes.load(), probes.Lab(KIT_ROOT / "solutions")
    found = {}
    for task in tasks:
        if task.kind != "probe":
            continue
        best, result = float("inf"), None
        for _ in range(repeat):
            hand = None if table[task.name].library_attention else confine.HandWritten()
            torch.manual_seed(0)
            torch.set_default_dtype(torch.float32)
            exact_float32()
            start = time.perf_counter()
            with torch.enable_grad(), hand or contextlib.nullcontext():
                result = lab.attempt(table[task.name].fn, lab, task.device)
            best = min(best, time.perf_counter() - start)
        found[task] = best, result
    return found


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--top", type=int, default=10)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args(argv)
    checks = all_checks()
    tasks = plan(checks, {"cpu", "meta"})
    ran = timed_probes(tasks, args.repeat)
    golden = load_golden()
    judged = []
    for c in checks:
        for task, (_, obs) in ran.items():
            if task.name == c.probe and task.device in c.devices:
                best = float("inf")
                for _ in range(args.repeat):
                    start = time.perf_counter()
                    verdict = judge(c, obs, golden.get(c.probe), task.device)
                    best = min(best, time.perf_counter() - start)
                judged.append((best, f"{c.id}@{task.device}", verdict.status))
    wrong = [name for _, name, status in judged if status != "passed"]
    if len(wrong) > len(judged) // 10:  # a profile of failures would time the wrong work
        sys.exit(f"the reference did not pass {len(wrong)} checks here, e.g. {wrong[:3]}: nothing to profile")
    if wrong:  # a speed check on a busy machine, say: the rest stands
        print(f"note: the reference did not pass {', '.join(wrong)} here; its times may be a failure's")
    probe_total, judge_total = sum(s for s, _ in ran.values()), sum(s for s, _, _ in judged)
    print(f"{len(ran)} probe runs: {probe_total:.2f} s; {len(judged)} judgements: {judge_total:.2f} s "
          f"(best of {args.repeat}, this process, {torch.get_num_threads()} torch threads)")
    print(f"\nthe {args.top} slowest probes")
    for task, (seconds, _) in sorted(ran.items(), key=lambda kv: -kv[1][0])[:args.top]:
        print(f"  {seconds * 1000:8.1f} ms  {task.name}@{task.device}")
    print(f"\nthe {args.top} slowest judges")
    for seconds, name, status in sorted(judged, reverse=True)[:args.top]:
        print(f"  {seconds * 1000:8.1f} ms  {name}  ({status})")


if __name__ == "__main__":
    main()
