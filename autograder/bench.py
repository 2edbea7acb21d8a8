"""Time ``grade`` on the bundled material: ``python -m autograder.bench [--repeat N]``.

Each run grades in a fresh child process exactly as ``attention-lab grade`` does; the
figures are wall-clock seconds per submission (median and range over the repeats).
"""
import argparse
import platform
import statistics
import time

import torch

from .build import KIT_ROOT
from .grade import grade


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args(argv)
    print(f"torch {torch.__version__}, Python {platform.python_version()}, {platform.machine()}, "
          f"cuda {'available' if torch.cuda.is_available() else 'not available'}")
    for name in ("solutions", "assignments"):
        times, score = [], None
        for _ in range(args.repeat):
            start = time.perf_counter()
            results = grade(KIT_ROOT / name).results
            times.append(time.perf_counter() - start)
            score = f"{sum(r.points for r in results)}/{sum(r.max_points for r in results)}"
        print(f"{name:<12} score {score:>6}  median {statistics.median(times):.2f} s  "
              f"(min {min(times):.2f}, max {max(times):.2f}, {args.repeat} runs)")


if __name__ == "__main__":
    main()
