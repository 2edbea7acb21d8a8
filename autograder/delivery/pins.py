"""What the grading platforms install: the torch that ``constraints.txt`` pins, as a CPU build."""
from __future__ import annotations

import re
from pathlib import Path

from ..errors import BuildError
from ..paths import KIT_ROOT

# GitHub's runners get several GB of CUDA wheels from an unpinned `pip install torch`; these are CPU-only.
CPU_WHEELS = "https://download.pytorch.org/whl/cpu"


def torch_pin(root: Path = KIT_ROOT) -> str:
    """The torch requirement constraints.txt pins, e.g. ``torch==2.13.0``."""
    found = re.search(r"^torch==\S+", (root / "constraints.txt").read_text(), flags=re.M)
    if not found:
        raise BuildError("constraints.txt pins no torch==VERSION")
    return found.group(0)
