"""Test one stage, as a stage's author does while writing it: ``python -m tools.stage_tests N [--no-mutants]``.

In order, stopping at the first step that fails:

1. ``attention-lab build --check``: the stub, the public checks' copies, the golden data and the forms are
   those of ``solutions/`` (run ``attention-lab build`` after changing the solution or a probe);
2. the reference graded on stage N gets every point, and the stub none;
3. the student's self-checks of stage N (``pytest -m stageN`` in ``assignments/``), against the reference;
4. the kit's tests of stage N alone (``pytest tests -m stageN``): its zoo entries (wrong, correct, seeds),
   its degenerate cases, the judges' fuzzing of its checks, its notebook;
5. the mutants of its module (``python -m tools.mutate --module M``), unless ``--no-mutants``: how many of
   the reference's first-order mutants its checks kill, and each survivor.

The whole suite (README's second command) still runs before a stage is handed out: the guards that span
stages (totals, docs, the architecture's layers) are there.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

from autograder.curriculum import STAGES
from autograder.paths import KIT_ROOT


def step(title: str, args: list[str], cwd: Path = KIT_ROOT, env: dict | None = None) -> None:
    print(f"\n== {title}\n$ {' '.join(args)}", flush=True)
    done = subprocess.run(args, cwd=cwd, env={**os.environ, **(env or {})})
    if done.returncode:
        sys.exit(f"stage tests: '{title}' failed (exit {done.returncode})")


def full_and_none(number: int) -> None:
    """The reference gets every point of the stage, and the untouched stub none."""
    with tempfile.TemporaryDirectory() as tmp:
        for folder, want in (("solutions", "all"), ("assignments", "none")):
            out = Path(tmp) / f"{folder}.json"
            step(f"grade {folder} (stage {number}): {want} of the points",
                 [sys.executable, "-m", "autograder.cli", "grade", folder, f"--stage={number}", "--json", str(out)])
            tests = json.loads(out.read_text())["tests"]
            got, top = sum(t["score"] for t in tests), sum(t["max_score"] for t in tests)
            if (got, top) != ((top, top) if want == "all" else (0, top)) or not tests:
                sys.exit(f"stage tests: {folder} got {got}/{top} on stage {number}, where it should get {want}")


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("stage", type=int, choices=sorted(STAGES), metavar="N")
    parser.add_argument("--no-mutants", action="store_true", help="leave out the mutation run (the longest step)")
    args = parser.parse_args(argv)
    number, module = args.stage, STAGES[args.stage].module
    python = sys.executable
    step("the built files are those of solutions/", [python, "-m", "autograder.cli", "build", "--check"])
    full_and_none(number)
    step(f"the self-checks of stage {number}, against the reference", [python, "-m", "pytest", "-q", "-p",
         "no:cacheprovider", "-m", f"stage{number}"], cwd=KIT_ROOT / "assignments",
         env={"ATTENTION_LAB_SUBMISSION": str(KIT_ROOT / "solutions")})
    step(f"the kit's tests of stage {number}: zoo, degenerate cases, fuzzed judges, notebook",
         [python, "-m", "pytest", "tests", "-q", "-m", f"stage{number}", "-n", "auto"])
    if not args.no_mutants:
        step(f"the mutants of {module}.py", [python, "-m", "tools.mutate", "--module", module])
    print(f"\nstage {number} ({module}.py): every step passed")


if __name__ == "__main__":
    main()
