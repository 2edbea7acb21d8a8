"""Time README's first command from a fresh clone: ``python -m tools.bench_setup [--ref REF] [--runs N]``.

Clones the checkout's commit REF (HEAD by default) into a temporary folder, as a new user's ``git clone``
would, and runs the first shell block of that commit's README.md there with bash: its setup and its
main job, as one command. It prints, per run, the command's wall time, the size of the ``.venv`` it
left (as ``du -s`` counts it: the blocks on disk, each file once), and how many packages are installed
there. With ``--ref`` of an older commit, the same measure of what README said then: the before of a
change to the setup.

pip's own download cache is left as it is: a machine that installed torch once keeps its wheel, and the
time measured is that of a machine that has (the first download is the network's, not the kit's).
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import tempfile
import time
from pathlib import Path

from autograder.paths import KIT_ROOT


def first_command(readme: str) -> str:
    """The first fenced shell block of a README, its lines joined where one ends in a backslash."""
    lines, inside = [], False
    for line in readme.splitlines():
        if line.startswith("```"):
            if inside:
                break
            inside = line.strip() in ("```bash", "```sh")
            continue
        if inside:
            lines.append(line.rstrip().removesuffix("\\"))
    if not lines:
        raise SystemExit("README.md has no shell block")
    return " ".join(part.strip() for part in lines)


def disk_usage(folder: Path) -> int:
    """Bytes on disk under ``folder``, each inode once (``du -s``'s count: blocks of 512 bytes)."""
    seen, total = set(), 0
    for root, dirs, files in os.walk(folder):
        for name in dirs + files:
            st = os.lstat(os.path.join(root, name))
            if (st.st_dev, st.st_ino) not in seen:
                seen.add((st.st_dev, st.st_ino))
                total += st.st_blocks * 512
    return total + os.lstat(folder).st_blocks * 512


def packages(venv: Path) -> int:
    found = subprocess.run([str(venv / "bin" / "python"), "-c",
                            "import importlib.metadata as m, json; "
                            "print(json.dumps(sorted({d.metadata['Name'].lower() for d in m.distributions()})))"],
                           capture_output=True, text=True, check=True)
    return len(json.loads(found.stdout))


def measure(ref: str) -> dict[str, object]:
    with tempfile.TemporaryDirectory(prefix="bench-setup-") as tmp:
        clone = Path(tmp) / "attention-lab"
        subprocess.run(["git", "clone", "-q", "--no-checkout", str(KIT_ROOT), str(clone)], check=True)
        subprocess.run(["git", "-C", str(clone), "checkout", "-q", ref], check=True)
        command = first_command((clone / "README.md").read_text())
        env = {**os.environ, "PIP_DISABLE_PIP_VERSION_CHECK": "1"}
        start = time.monotonic()
        done = subprocess.run(["bash", "-c", command], cwd=clone, env=env, stdout=subprocess.DEVNULL,
                              stderr=subprocess.PIPE, text=True)
        wall = time.monotonic() - start
        venv = clone / ".venv"
        if done.returncode != 0:
            raise SystemExit(f"README's first command exited {done.returncode}:\n{done.stderr[-3000:]}")
        return {"ref": ref, "wall s": round(wall, 1), "venv MiB": round(disk_usage(venv) / 2**20),
                "packages": packages(venv)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ref", default="HEAD", help="the commit whose README's first command is run (HEAD)")
    parser.add_argument("--runs", type=int, default=1, help="how many fresh clones, one after another (1)")
    args = parser.parse_args()
    ref = subprocess.run(["git", "-C", str(KIT_ROOT), "rev-parse", "--short", args.ref], capture_output=True,
                         text=True, check=True).stdout.strip()
    with open("/proc/loadavg") as f:
        print(f"load average before: {f.read().split()[0]}")
    for _ in range(args.runs):
        print(json.dumps(measure(ref)), flush=True)


if __name__ == "__main__":
    main()
