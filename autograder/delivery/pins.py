"""What the grading platforms install: the versions ``constraints.txt`` pins, torch as a CPU build."""
from __future__ import annotations

import re
from pathlib import Path

from ..errors import BuildError
from ..paths import KIT_ROOT

# GitHub's runners get several GB of CUDA wheels from an unpinned `pip install torch`; these are CPU-only.
CPU_WHEELS = "https://download.pytorch.org/whl/cpu"


def pin(package: str, root: Path = KIT_ROOT) -> str:
    """The requirement constraints.txt pins for ``package``, e.g. ``torch==2.13.0``."""
    found = re.search(rf"^{re.escape(package)}==\S+", (root / "constraints.txt").read_text(), flags=re.M)
    if not found:
        raise BuildError(f"constraints.txt pins no {package}==VERSION")
    return found.group(0)


def torch_pin(root: Path = KIT_ROOT) -> str:
    return pin("torch", root)
