"""How long nbgrader's kernel may run each cell of the course's notebooks: nbclient's ``timeout_func``,
which the course's ``nbgrader_config.py`` sets on nbgrader's ``Execute`` (autograde, and Validate in the
course's folder).

nbclient takes one timeout for every cell (``timeout``), or a function of the cell (``timeout_func``); it
reads none from the notebook (a cell's ``metadata.execution`` is where it records when the cell ran, and it
clears that before running the cell). A grade cell grades its whole stage in attention-lab's isolated
runner, whose own watchdog bounds it: each gets that bound for its own stage, not the slowest stage's. A
cell that is no grade cell decides no points, and gets the course's bound for such cells, so that a
student's cell that never ends costs autograde minutes, not the slowest stage's hour and a half.

The grade ids are the course's (``s3-causal-no_leak`` for check ``s3.causal.no_leak``), and a check's id
starts with its stage (the registry holds it to that). Nothing here needs nbgrader.
"""
from __future__ import annotations

import re
from collections.abc import Mapping


class StageTimeouts:
    """``timeout_func``: a grade cell's stage's bound (``stages``: stage -> seconds), ``other`` seconds for
    any other cell."""

    def __init__(self, stages: Mapping[int, int], other: int):
        self.stages, self.other = dict(stages), other

    def __call__(self, cell) -> int:
        meta = cell.get("metadata", {}).get("nbgrader", {})
        found = re.match(r"s(\d+)-", meta.get("grade_id", "")) if meta.get("grade") else None
        return self.stages.get(int(found.group(1)), self.other) if found else self.other

    def __repr__(self) -> str:  # as nbgrader_config.py writes it (nbgrader prints its configuration so)
        return f"StageTimeouts({self.stages!r}, other={self.other!r})"
