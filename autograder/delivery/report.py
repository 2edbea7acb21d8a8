"""Reports of results: a table per stage for the terminal, and files written atomically."""
from __future__ import annotations

import json
import os
import re
import tempfile
import textwrap
from pathlib import Path

from ..curriculum import STAGES
from ..grading.results import ERROR, FAILED, PASSED, Cause, stage_totals


def untouched(results) -> bool:
    """Has the student not started these checks' stage: nothing passed, and every check failed
    for want of code (``Cause.UNTOUCHED``), not for a wrong answer?"""
    return all(r.status == FAILED and r.cause == Cause.UNTOUCHED for r in results)


WIDTH, INDENT = 110, " " * 9  # a check's feedback under it: wrapped at words, never cut
# ... and so every line the kit writes into a page that shows text as it is (nbgrader's feedback, Gradescope's)
LINE = WIDTH - len(INDENT)


def wrapped(text: str, width: int = LINE) -> str:
    """``text`` wrapped at words (``public.feedback.wrapped``) to the width a check's feedback has under it."""
    from ..public import feedback  # here: it imports torch, which `grade` must not before its fork server starts

    return feedback.wrapped(text, width)


def render_table(results, seconds, verbose=False, color=False):
    """The table of a grading: a line per stage, and under a stage the student worked on, each
    check it failed with the first line of its feedback. A stage fully passed or not started is
    one line; ``verbose`` lists every check, passed ones with what they measured."""
    def paint(text, code):
        return f"\033[{code}m{text}\033[0m" if color else text

    lines = []
    totals = stage_totals(results)
    width = max((len(STAGES[stage].title) for stage in totals), default=0)
    digits = max((len(str(stage)) for stage in totals), default=1)  # "Stage  9" above "Stage 10": the titles align
    for stage, t in totals.items():
        s = STAGES[stage]
        mine = [r for r in results if r.stage == stage]
        status = paint(f"{t.points:>3}/{t.max_points:<3}", "32" if t.points == t.max_points else
                       "31" if t.points == 0 else "33")
        quiet = not verbose and untouched(mine)
        lines.append(f"Stage {stage:>{digits}}  {s.title:<{width}} {status} {t.passed:>2}/{t.checks} checks passed   "
                     f"({s.module}.py)" + ("   not started" if quiet else ""))
        for r in [] if quiet else mine:
            if r.passed and not verbose:
                continue
            mark = {PASSED: paint("ok  ", "32"), FAILED: paint("FAIL", "31"), ERROR: paint("ERR ", "35")}[r.status]
            lines.append(f"    {mark} {r.id:<24} {r.points}/{r.max_points}  {r.title}")
            said = r.feedback.splitlines()
            if not r.passed or len(said) > 1:  # a passed check's next line: what it measured
                lines += textwrap.wrap(printable(said[0 if not r.passed else 1]), WIDTH, initial_indent=INDENT,
                                       subsequent_indent=INDENT, break_on_hyphens=False) or [INDENT]
    total = sum(r.points for r in results)
    maximum = sum(r.max_points for r in results)
    lines.append("")
    lines.append(f"Total {total}/{maximum} points, {sum(r.passed for r in results)}/{len(results)} checks "
                 f"passed, graded in {seconds:.1f} s" + ("" if verbose else "   (--verbose: every check)"))
    regrade = [r.id for r in results if r.status == ERROR]
    if regrade:
        lines.append(f"The grader failed on {len(regrade)} check(s), not the submission: {', '.join(regrade)}; "
                     "they count 0 until graded again by a fixed kit")
    return "\n".join(lines)


_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]")


def printable(text) -> str:
    """``text`` (a student's file or folder name, a line of feedback) safe for one terminal line:
    control characters (escape sequences, newlines, carriage returns) and bytes that are not UTF-8
    (a folder named in Latin-1) written as ``\\x..`` escapes, so that a name can neither clear the
    screen, retitle the window nor forge a line of its own."""
    text = str(text).encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")
    return _CONTROL.sub(lambda m: f"\\x{ord(m.group()):02x}", text)


def csv_cell(value):
    """A cell of a CSV an instructor opens in a spreadsheet: a student's text made ``printable``,
    and a leading ``= + - @`` (or tab, carriage return) made inert with a quote, as OWASP advises
    against formula injection. Numbers stay numbers."""
    if not isinstance(value, str):
        return value
    text = printable(value)
    return "'" + text if text[:1] in ("=", "+", "-", "@", "\t", "\r") else text


TEMPORARY = ".tmp-"  # what a killed writer may leave behind: safe to delete


def write_json(data, path):
    """Write atomically: a reader never sees half a file, a crash leaves the old one."""
    write_atomically(path, json.dumps(data, indent=2) + "\n")


def write_atomically(path, content):
    """Write ``content`` (text or bytes) to a temporary file beside ``path``, flush it to disk,
    then rename it over ``path``: whenever the process dies, ``path`` holds the old content or the
    new, never half. The file is the writer's alone (0600): grades and feedback stay private."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f"{TEMPORARY}{path.name}.")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(content.encode() if isinstance(content, str) else content)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
