"""What the grading platforms install: the versions ``constraints.txt`` pins, torch as a CPU build."""
from __future__ import annotations

import re
from pathlib import Path

from ..errors import BuildError
from ..paths import KIT_ROOT

# GitHub's runners get several GB of CUDA wheels from an unpinned `pip install torch`; these are CPU-only.
CPU_WHEELS = "https://download.pytorch.org/whl/cpu"
NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*")  # a requirement's project name, which PEP 508 puts first


def pin(package: str, root: Path = KIT_ROOT) -> str:
    """The requirement constraints.txt pins for ``package``, e.g. ``torch==2.13.0``."""
    found = re.search(rf"^{re.escape(package)}==\S+", (root / "constraints.txt").read_text(), flags=re.M)
    if not found:
        raise BuildError(f"constraints.txt pins no {package}==VERSION")
    return found.group(0)


def torch_pin(root: Path = KIT_ROOT) -> str:
    return pin("torch", root)


def name_of(requirement: str) -> str:
    """The project a requirement names, as pip compares names (PEP 503: case and ``-_.`` alike)."""
    found = NAME.match(requirement.strip())
    if not found:
        raise BuildError(f"pyproject.toml lists a dependency that names no project: {requirement!r}")
    return re.sub(r"[-_.]+", "-", found.group(0)).lower()


def dependencies(root: Path = KIT_ROOT) -> list[str]:
    """What grading imports, as pyproject.toml's ``[project] dependencies`` writes it (ranges and markers),
    each pinned in constraints.txt: a platform installs these with ``-c constraints.txt``, so that its
    grader runs the versions the kit's own machines test. Raises ``BuildError`` naming a dependency that
    constraints.txt does not pin."""
    from ..common import toml

    listed = [str(r) for r in toml.loads((root / "pyproject.toml").read_text())["project"]["dependencies"]]
    pinned = {name_of(p) for p in re.findall(r"^\s*([^#\s=]+)==", (root / "constraints.txt").read_text(), re.M)}
    unpinned = [r for r in listed if name_of(r) not in pinned]
    if unpinned:
        raise BuildError(f"constraints.txt pins no version of {', '.join(map(name_of, unpinned))}, which "
                         "pyproject.toml's dependencies list: pin it there (NAME==VERSION, with a marker where the "
                         "version differs by Python), so that every platform grades with the versions tested")
    return listed
