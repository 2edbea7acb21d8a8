"""``attention-lab export moss``: a class's graded code laid out for a plagiarism checker.

One folder per student with the modules that are graded for them (a notebook's module cell, or
the module file: the code the grader read), and the stubs as the base code, which every student
starts from and which a checker must not count as copied::

    OUT/base/simple.py ...              the stubs
    OUT/submissions/<student>/simple.py ...

MOSS and JPlag both take this layout (``OUT/README.txt`` has their command lines).
"""
from __future__ import annotations

import shutil
from pathlib import Path

from ..curriculum import STAGES
from ..errors import SubmissionError
from ..intake.submission import opened
from ..paths import KIT_ROOT
from .classrun.grade_all import discover

HOW = """\
The graded code of each student (submissions/<student>/), and the stubs every student started
from (base/), which a checker must not count as copied.

MOSS:   moss -l python -d -b base/{first} ... submissions/*/*.py    (one -b per file in base/)
JPlag:  java -jar jplag.jar -l python3 -bc base submissions
"""


def export(submissions_dir, out_dir, stages=None, log=print):
    """Write the layout into ``out_dir`` (new, or empty). Returns {student: why} of the students
    whose code could not be read (nothing of theirs is written)."""
    folder, out = Path(submissions_dir).expanduser().resolve(), Path(out_dir).expanduser().resolve()
    if out.exists() and any(out.iterdir()):
        raise FileExistsError(f"{out} is not empty: name a new folder")
    entries, ignored = discover(folder, skip=[out])
    modules = [STAGES[n].module for n in sorted(stages or STAGES)]
    (out / "base").mkdir(parents=True)
    for module in modules:
        shutil.copyfile(KIT_ROOT / "assignments" / "attention_lab" / f"{module}.py", out / "base" / f"{module}.py")
    skipped = {}
    for entry in entries:
        try:
            with opened(entry.path) as submission:
                code = submission.code()
        except (SubmissionError, OSError) as exc:
            skipped[entry.student] = getattr(exc, "student", None) or str(exc)
            continue
        mine = out / "submissions" / entry.student
        mine.mkdir(parents=True)
        for module in modules:
            if module in code:
                (mine / f"{module}.py").write_text(code[module], encoding="utf-8")
    (out / "README.txt").write_text(HOW.format(first=f"{modules[0]}.py"))
    log(f"wrote the code of {len(entries) - len(skipped)} student(s) to {out / 'submissions'}, the stubs to "
        f"{out / 'base'}" + (f"; not readable: {', '.join(f'{s} ({w})' for s, w in skipped.items())}" if skipped
                             else "") + (f"; ignored: {', '.join(ignored)}" if ignored else ""))
    return skipped
