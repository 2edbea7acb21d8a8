"""nbgrader's markers in the one source, ``solutions/``: what a student receives of a module, and
what a student who solved it hands in. The build writes the stubs with it, the course its
notebooks, and the release guard looks for what must never be released."""
from __future__ import annotations

from ..errors import BuildError

BEGIN, END = "### BEGIN SOLUTION", "### END SOLUTION"
HIDDEN_BEGIN, HIDDEN_END = "### BEGIN HIDDEN TESTS", "### END HIDDEN TESTS"


def strip_solutions(source: str, name: str = "<source>") -> str:
    """nbgrader's rule for a module: a solution region becomes ``# YOUR CODE HERE`` and
    ``raise NotImplementedError()`` at the marker's indent; hidden-test regions vanish."""
    out, region, start = [], None, 0
    for number, line in enumerate(source.splitlines(keepends=True), 1):
        marker = line.strip()
        if marker in (BEGIN, HIDDEN_BEGIN):
            if region:
                raise BuildError(f"{name}:{number}: {marker} inside the region opened at line {start}")
            indent = line[: len(line) - len(line.lstrip())]
            if marker == BEGIN and not indent:
                raise BuildError(f"{name}:{number}: a solution region at module level would raise at import")
            region, start = marker, number
            if marker == BEGIN:
                out += [f"{indent}# YOUR CODE HERE\n", f"{indent}raise NotImplementedError()\n"]
        elif marker in (END, HIDDEN_END):
            if region != {END: BEGIN, HIDDEN_END: HIDDEN_BEGIN}[marker]:
                raise BuildError(f"{name}:{number}: {marker} without its BEGIN")
            region = None
        elif region is None:
            out.append(line)
    if region:
        raise BuildError(f"{name}:{start}: {region} is never closed")
    return "".join(out)


def solved(source: str) -> str:
    """The reference as a student who solved it would hand it in: the solution, no markers."""
    return "".join(line for line in source.splitlines(keepends=True) if line.strip() not in (BEGIN, END))
