"""Do the graders give the same points on CUDA as on the CPU?
``python -m tools.device_agreement [--jobs N] [--json FILE]``, on a machine with CUDA.

Grades the reference (``solutions/``), the stubs (``assignments/``) and every entry of the zoo's
wrong, correct and seed code, on every device, and keeps each check's verdict per device (a numeric
check runs on cpu and cuda, a check of device movement on meta and cuda). An entry's CPU points are
those of the checks whose cpu/meta verdicts passed, its CUDA points those whose cuda verdict passed.
Prints one line per entry whose two totals differ, then a summary; exits 1 if any differs, if the
reference is not full on CUDA or the stubs not zero, or if a check ran nowhere near CUDA.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import torch

from autograder.curriculum import stages_using
from autograder.grading.grade import grade
from autograder.grading.results import NOT_MEASURED, PASSED
from autograder.paths import KIT_ROOT
from autograder.sandbox.forkserver import ForkServer
from tools.zoo import CORRECT, SEEDS, WRONG, assemble, read_entry


def sides(result) -> tuple[int, int]:
    """(points on the CPU side, points on CUDA) of one check. A check that did not run on CUDA, or
    was not measured there (a tensor left on the CPU: the device checks' business), counts the same
    on both; one that ran on CUDA alone, likewise."""
    cpu = [status == PASSED for device, status in result.devices.items() if device != "cuda"]
    cuda = result.devices.get("cuda")
    cpu_ok = all(cpu) if cpu else cuda == PASSED
    cuda_ok = cpu_ok if cuda in (None, NOT_MEASURED) else cuda == PASSED
    return result.max_points * cpu_ok, result.max_points * cuda_ok


def compare(results) -> dict:
    """An entry's totals on each side, and the checks whose verdicts differ between them."""
    split = [(r, *sides(r)) for r in results]
    return {"cpu": sum(c for _, c, _ in split), "cuda": sum(g for _, _, g in split),
            "max": sum(r.max_points for r in results),
            "on_cuda": sum("cuda" in r.devices for r in results), "checks": len(results),
            "differs": {r.id: r.feedback for r, c, g in split if c != g}}


def submissions(scratch: Path):
    """(name, folder, stages) of everything graded: the reference, the stubs, then the zoo."""
    yield "solutions", KIT_ROOT / "solutions", None
    yield "assignments", KIT_ROOT / "assignments", None
    for path in WRONG + CORRECT + SEEDS:
        entry = read_entry(path)
        folder = scratch / f"{path.parent.name}-{path.stem}"
        yield f"{path.parent.name}/{path.stem}", assemble(path, entry, folder), stages_using(entry["MODULE"])


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--jobs", type=int, default=max(1, (os.cpu_count() or 2) // 2))
    parser.add_argument("--json", metavar="FILE", help="also write every entry's totals there")
    args = parser.parse_args(argv)
    if not torch.cuda.is_available():
        parser.error("no CUDA device here: this compares the CPU's verdicts with CUDA's")
    local = threading.local()
    servers = []

    def graded(item):
        name, folder, stages = item
        if not hasattr(local, "server"):  # one fork server per worker thread, as grade-all has
            local.server = ForkServer(meta=True, threads=2)
            servers.append(local.server)
        return name, compare(grade(folder, stages=stages, server=local.server).results)

    with tempfile.TemporaryDirectory() as scratch:
        try:
            found = {}
            with ThreadPoolExecutor(args.jobs) as pool:
                for name, totals in pool.map(graded, list(submissions(Path(scratch)))):  # in order, as graded
                    found[name] = totals
                    print(f"{len(found):4} {name}: {totals['cpu']}/{totals['max']} on the CPU, "
                          f"{totals['cuda']}/{totals['max']} on CUDA", flush=True)
        finally:
            for server in servers:
                server.close()
    problems = [f"{name}: {t['cpu']}/{t['max']} on the CPU, {t['cuda']}/{t['max']} on CUDA; differs in "
                + "; ".join(f"{c}: {text.splitlines()[0]}" for c, text in t["differs"].items())
                for name, t in found.items() if t["cpu"] != t["cuda"]]
    ref, stubs = found["solutions"], found["assignments"]
    if not (ref["cpu"] == ref["cuda"] == ref["max"]):
        problems.append(f"solutions: {ref['cuda']}/{ref['max']} on CUDA, not full marks")
    if stubs["cuda"] or stubs["cpu"]:
        problems.append(f"assignments: {stubs['cuda']} points on CUDA, {stubs['cpu']} on the CPU, not 0")
    if not ref["on_cuda"]:
        problems.append("no check of the reference ran on CUDA")
    for line in problems:
        print(line)
    if args.json:
        Path(args.json).write_text(json.dumps(found, indent=1))
    print(f"device agreement: {len(found)} submissions graded on {torch.cuda.get_device_name()}; "
          f"reference {ref['cuda']}/{ref['max']} on CUDA ({ref['on_cuda']} of {ref['checks']} checks ran there), "
          f"stubs {stubs['cuda']}; {sum(t['cpu'] != t['cuda'] for t in found.values())} whose CUDA points differ")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
