"""Where the kit lives: the installed package, and the checkout around it (with ``solutions/``,
``assignments/`` and ``constraints.txt`` when it is a source checkout)."""
from pathlib import Path

KIT_PACKAGE = Path(__file__).resolve().parent  # autograder/: what is shipped and fingerprinted
KIT_ROOT = KIT_PACKAGE.parent
DATA = (".pt", ".json")  # the package's data: golden data, and the forms of the reference's observations


def runtime_files() -> list[Path]:
    """The installed package: its code and the data it reads. What the Gradescope zip ships and what
    grade-all's fingerprint of the kit covers (benchmarks, the zoo and tests live outside it)."""
    return sorted(p for p in KIT_PACKAGE.rglob("*")
                  if p.is_file() and "__pycache__" not in p.parts and p.suffix in (".py", *DATA))
