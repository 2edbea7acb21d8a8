"""Reports of check results: a table per stage for the terminal, Gradescope's results.json."""
from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path

from .registry import STAGES, max_points


def stage_totals(results):
    """{stage: (points, max_points, checks passed, checks)} in stage order."""
    totals = {}
    for r in results:
        p, m, n_ok, n = totals.get(r.stage, (0, 0, 0, 0))
        totals[r.stage] = (p + r.points, m + r.max_points, n_ok + r.passed, n + 1)
    return dict(sorted(totals.items()))


def render_table(results, seconds, verbose=False, color=False):
    def paint(text, code):
        return f"\033[{code}m{text}\033[0m" if color else text

    lines = []
    totals = stage_totals(results)
    width = max((len(STAGES[stage].title) for stage in totals), default=0)
    for stage, (p, m, n_ok, n) in totals.items():
        s = STAGES[stage]
        status = paint(f"{p:>3}/{m:<3}", "32" if p == m else "31" if p == 0 else "33")
        lines.append(f"Stage {stage}  {s.title:<{width}} {status} {n_ok:>2}/{n} checks passed   ({s.module}.py)")
        for r in results:
            if r.stage != stage or (r.passed and not verbose):
                continue
            mark = {"passed": paint("ok  ", "32"), "failed": paint("FAIL", "31"),
                    "error": paint("ERR ", "35")}[r.status]
            lines.append(f"    {mark} {r.id:<24} {r.points}/{r.max_points}  {r.title}")
            said = r.feedback.splitlines()
            if not r.passed or len(said) > 1:  # a passed check's next line: what it measured
                lines.append(f"         {said[0 if not r.passed else 1][:300]}")
    total = sum(r.points for r in results)
    maximum = sum(r.max_points for r in results)
    lines.append("")
    lines.append(f"Total {total}/{maximum} points, {sum(r.passed for r in results)}/{len(results)} checks "
                 f"passed, graded in {seconds:.1f} s")
    regrade = [r.id for r in results if r.status == "error"]
    if regrade:
        lines.append(f"The grader failed on {len(regrade)} check(s), not the submission: {', '.join(regrade)}; "
                     "they count 0 until graded again by a fixed kit")
    return "\n".join(lines)


def gradescope_results(results, seconds):
    """Gradescope's results.json: one test per check, with its visibility.

    Gradescope knows a test's status as passed or failed only, so a check the grader failed on is
    "failed" with ``extra_data.grader_error`` set, and the top level's ``extra_data.regrade`` lists
    them: what a fixed kit must grade again."""
    data = {
        "score": sum(r.points for r in results),
        "execution_time": round(seconds, 2),
        "stdout_visibility": "hidden",
        "tests": [
            {
                "name": f"Stage {r.stage}: {r.title}",
                "number": r.id,
                "score": r.points,
                "max_score": r.max_points,
                "status": "passed" if r.passed else "failed",
                "output": r.feedback,
                "visibility": r.visibility,
                **({"extra_data": {"grader_error": True}} if r.status == "error" else {}),
            }
            for r in results
        ],
    }
    regrade = [r.id for r in results if r.status == "error"]
    if regrade:
        data["extra_data"] = {"regrade": regrade}
    return data


def ungradable_results(output, why, stages):
    """results.json for a submission that could not be graded at all: score 0, ``output`` on top,
    and one failed test per stage, so the student sees what each stage was worth and why it got nothing."""
    return {
        "score": 0,
        "output": output,
        "stdout_visibility": "hidden",
        "tests": [{"name": f"Stage {n}: {STAGES[n].title}", "number": f"s{n}", "score": 0,
                   "max_score": max_points(n), "status": "failed", "output": f"not graded: {why}",
                   "visibility": "visible"} for n in stages],
    }


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
