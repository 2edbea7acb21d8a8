"""A class's results at a glance: the score distribution and the checks most failed (item
analysis), as text and as pictures (SVG, drawn as the students' own pictures are: no plotting library
to install, and a browser opens them)."""
from __future__ import annotations

import statistics
from collections import Counter
from dataclasses import dataclass

from ...curriculum import STAGES
from ...public.pictures import Picture, svg_text
from ...grading.registry import Check
from ...grading.results import Cause
from ..report import printable

BINS = 10
BAR, MARK = "#4c78a8", "#c44e52"  # the pictures' blue (public.pictures) and the red of what went wrong


def bins(totals, out_of):
    """(counts, edges): totals in bins of a whole number of points each, at most ``BINS`` of
    them; the last bin closes at ``out_of``, so full marks are counted with the top scores."""
    width = max(1, -(-out_of // BINS))
    n = max(1, -(-out_of // width))
    counts = [0] * n
    for t in totals:
        counts[min(int(t) // width, n - 1)] += 1
    edges = [i * width for i in range(n)] + [out_of]
    return counts, edges


@dataclass(frozen=True)
class Item:
    """One check across a class: how many students tried it (wrote the code it needs: a stub's
    NotImplementedError or a missing module is no attempt), how many of them failed it, and the
    first line of feedback they were given most often, with how many were given it."""
    check: Check
    tried: int
    failed: int
    said: str
    said_count: int
    untried: int  # students graded on it who never wrote its code

    @property
    def rate(self):
        """The share of the students who tried the check and failed it: what a lesson is judged by,
        unmixed with how far through the assignment the class is."""
        return self.failed / self.tried if self.tried else 0.0


def _cause(test) -> str | None:
    """Why a failed test of a record failed, as its ``extra_data`` says: this kit writes a cause on every
    failed check; a failed test without one is a submission that could not be graded at all. Never read
    from the feedback's words."""
    return (test.get("extra_data") or {}).get("cause")


def item_analysis(records, checks) -> list[Item]:
    """Each of ``checks`` over the students' ``records`` (grade-all's), the most failed first."""
    items = []
    for check in checks:
        tests = [t for r in records for t in r.data.get("tests", []) if t.get("number") == check.id]
        untried = [t for t in tests if t.get("status") != "passed" and _cause(t) == Cause.UNTOUCHED]
        failed = [t for t in tests if t.get("status") != "passed" and t not in untried]
        said = Counter((t.get("output") or "").partition("\n")[0] for t in failed)
        line, count = said.most_common(1)[0] if said else ("", 0)
        items.append(Item(check, len(tests) - len(untried), len(failed), line, count, len(untried)))
    return sorted(items, key=lambda i: (-i.rate, -i.failed, i.check.stage, i.check.id))


def _clip(text, most=90):
    return text if len(text) <= most else text[: most - 1] + "…"


def _items_text(items, most=15):
    failing = [i for i in items if i.failed]
    if not failing:
        return ["", "checks most failed: none (every check a student tried, they passed)"]
    lines = ["", f"checks most failed by the students who tried them ({len(failing)} of {len(items)} checks "
             f"failed by someone; the {min(most, len(failing))} most failed, with the feedback given most often, and "
             "how many students had not written the code yet)",
             f"{'check':<26} {'failed/tried':<12} {'':>4}  the first line of feedback given most often"]
    for i in failing[:most]:
        lines.append(f"{i.check.id:<26} {i.failed:>5}/{i.tried:<6} {i.rate:>4.0%}  {_clip(i.said)}"
                     + (f"  (x{i.said_count})" if i.said_count != i.failed else "")
                     + (f"  [{i.untried} not tried]" if i.untried else ""))
    return lines


def text_summary(rows, out_of, stage_max, problems=(), regrade=(), items=(), flagged=(), isolation=None,
                 workers=None):
    """``rows``: (student, total, {stage: points}) of every graded student; ``problems``: the students
    the grader failed on; ``regrade``: those graded but with checks the grader failed on; ``items``:
    the item analysis (``item_analysis``); ``flagged``: (student, findings) of those whose code
    reaches for the interpreter's internals (``intake.review``); ``isolation``: {what the gradings' children
    lacked of the kit's layers (``runner.shortfall``), None for nothing: how many gradings}, said last,
    where the instructor's eye ends up; ``workers``: {(worker, what its gradings lacked, "" for nothing):
    how many it graded in this run}, for a class graded on a cluster, said just before."""
    if not rows:
        return "no student was graded\n"
    totals = [total for _, total, _ in rows]
    q = statistics.quantiles(totals, n=4, method="inclusive") if len(totals) > 1 else [totals[0]] * 3
    lines = [
        f"{len(rows)} students graded, out of {out_of} points",
        f"mean {statistics.mean(totals):.1f}  median {statistics.median(totals):g}  "
        f"sd {statistics.pstdev(totals):.1f}  min {min(totals)}  max {max(totals)}  "
        f"quartiles {q[0]:g} / {q[1]:g} / {q[2]:g}",
        f"full marks: {sum(t == out_of for t in totals)}   zero: {sum(t == 0 for t in totals)}",
        "",
        "score range      students",
    ]
    counts, edges = bins(totals, out_of)
    peak = max(counts)
    for i, n in enumerate(counts):
        bar = "#" * round(40 * n / peak) if peak else ""
        closing = "]" if i == len(counts) - 1 else ")"
        lines.append(f"[{edges[i]:>4}, {edges[i + 1]:>4}{closing}  {n:>5}  {bar}")
    lines += ["", "stage                                       mean       full marks"]
    for stage, most in stage_max.items():
        got = [points.get(stage, 0) for _, _, points in rows]
        title = f"{stage} {STAGES[stage].title}"[:40]
        lines.append(f"{title:<40} {statistics.mean(got):6.1f}/{most:<4} {sum(g == most for g in got):>5}")
    if problems:
        lines += ["", f"not graded ({len(problems)}): " + ", ".join(problems)]
    if regrade:
        lines += ["", f"marked for a regrade: the grader failed on some of their checks ({len(regrade)}): "
                  + ", ".join(regrade)]
    if flagged:  # graded like anyone else, and named: a flag is for the instructor to look at
        lines += [""] + [f"flagged for review: {student}: {found[0]}"
                         + (f" (+{len(found) - 1} more)" if found[1:] else "")
                         for student, found in flagged]
    if items:
        lines += _items_text(items)
    if workers:
        lines += ["", "graded by, in this run:"] + [
            f"  {printable(worker)}: {n} grading{'s' * (n != 1)}, "
            + (f"WARNING: {lacked}" if lacked else "every layer the kit has")
            for (worker, lacked), n in sorted(workers.items())]
    if isolation:
        lines += [""] + _isolation_text(isolation)
    return "\n".join(lines) + "\n"


def _isolation_text(isolation):
    """One line when every grading was held by every layer the kit has; else one loud line for each way
    the gradings fell short, with how many of them did."""
    total = sum(isolation.values())
    if set(isolation) == {None}:
        return [f"isolation: every grading ({total}) held by every layer the kit has"]
    return [f"isolation: WARNING ({n} of {total} gradings): {said}" for said, n in isolation.items() if said]


def histogram(totals, out_of, title) -> Picture:
    """The score distribution as bars of ``bins``, the mean and the median as dashed lines."""
    counts, edges = bins(totals, out_of)
    left, head, wide, tall = 56, 34, 560, 220
    peak = max(counts + [1])
    x = [left + wide * e / max(out_of, 1) for e in edges]
    parts = [svg_text(8, 18, title, size=13, anchor="start", weight="bold"),
             f'<line x1="{left}" y1="{head + tall}" x2="{left + wide}" y2="{head + tall}" stroke="#888"/>',
             svg_text(left - 6, head + 8, peak, size=10, anchor="end"),
             svg_text(left - 6, head + tall, 0, size=10, anchor="end"),
             svg_text(18, head + tall / 2, "students", size=11, rotate=-90),
             svg_text(left + wide / 2, head + tall + 36, f"total points (out of {out_of})", size=11)]
    for n, a, b in zip(counts, x, x[1:]):
        h = tall * n / peak
        parts.append(f'<rect x="{a + 1:.1f}" y="{head + tall - h:.1f}" width="{b - a - 2:.1f}" height="{h:.1f}" '
                     f'fill="{BAR}"/>')
        if n:
            parts.append(svg_text((a + b) / 2, head + tall - h - 4, n, size=10))
    for a, edge in zip(x, edges):
        parts.append(svg_text(a, head + tall + 16, edge, size=10))
    said = []
    if totals:
        for k, (name, value, dashes) in enumerate((("mean", statistics.mean(totals), "6 4"),
                                                   ("median", statistics.median(totals), "2 3"))):
            at = left + wide * value / max(out_of, 1)
            key = left + wide - 200 + 110 * k  # the legend, right of the title: a stroke, then its words
            parts += [f'<line x1="{at:.1f}" y1="{head}" x2="{at:.1f}" y2="{head + tall}" stroke="{MARK}" '
                      f'stroke-width="2" stroke-dasharray="{dashes}"/>',
                      f'<line x1="{key}" y1="14" x2="{key + 22}" y2="14" stroke="{MARK}" stroke-width="2" '
                      f'stroke-dasharray="{dashes}"/>',
                      svg_text(key + 26, 18, f"{name} {value:.1f}", size=10, anchor="start", colour=MARK)]
            said.append(f"{name} {value:.1f}")
    width, height = left + wide + 20, head + tall + 48
    counted = "; ".join(f"{n} from {a} to {b}" for n, a, b in zip(counts, edges, edges[1:]) if n)
    alt = (f"A histogram of {title}, out of {out_of} points: {counted or 'no student'}"
           + (f"; {', '.join(said)}" if said else "") + ".")
    return Picture(_svg(width, height, parts), title, kind="histogram", alt=alt)


def _svg(width, height, parts):
    return (f'<svg xmlns="http://www.w3.org/2000/svg" width="{width:.0f}" height="{height:.0f}" '
            f'viewBox="0 0 {width:.0f} {height:.0f}"><rect width="{width:.0f}" height="{height:.0f}" fill="white"/>'
            + "".join(parts) + "</svg>")


def charted(items, most=25):
    """The checks the chart of failures shows: at most ``most`` of those some student failed, most failed
    first (``items``' order). A check no one failed is no bar (a class of three drew 17 bars of "0/1")."""
    return [i for i in items if i.failed][:most]


def failures(items, students, most=25) -> Picture | str:
    """The checks most failed as bars: the share of the students who tried each and failed it, the most
    failed on top. A Picture, or why none is drawn."""
    shown = charted(items, most)
    if not shown:
        return "no student failed a check they tried"
    label, left, head, row, wide = 8, 220, 34, 22, 400
    title = f"Checks most failed, {students} students"
    parts = [svg_text(label, 18, title, size=13, anchor="start", weight="bold")]
    for k, item in enumerate(shown):
        y = head + row * k
        w = wide * item.rate
        parts += [svg_text(label, y + 15, item.check.id, size=10, anchor="start", family="monospace"),
                  f'<rect x="{left}" y="{y + 4}" width="{w:.1f}" height="{row - 8}" fill="{MARK}"/>',
                  svg_text(left + w + 4, y + 15, f"{item.failed}/{item.tried}", size=10, anchor="start")]
    bottom = head + row * len(shown)
    parts += [f'<line x1="{left}" y1="{head}" x2="{left}" y2="{bottom}" stroke="#888"/>',
              svg_text(left, bottom + 30, "students who tried the check and failed it (share of them)", size=11,
                       anchor="start")]
    for share in (0, 50, 100):
        parts.append(svg_text(left + wide * share / 100, bottom + 14, f"{share}%", size=10))
    alt = f"A bar chart of the {len(shown)} checks most failed by the students who tried them: " + "; ".join(
        f"{i.check.id} failed by {i.failed} of {i.tried}" for i in shown) + "."
    return Picture(_svg(left + wide + 60, bottom + 44, parts), title, kind="failures", alt=alt)
