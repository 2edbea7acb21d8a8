"""A class's results at a glance: the score distribution and the checks most failed (item
analysis), as text and as pictures (PNG)."""
from __future__ import annotations

import statistics
from collections import Counter
from dataclasses import dataclass

from ...curriculum import STAGES
from ...grading.registry import Check
from ...grading.results import Cause

BINS = 10


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


def text_summary(rows, out_of, stage_max, problems=(), regrade=(), items=(), flagged=(), isolation=None):
    """``rows``: (student, total, {stage: points}) of every graded student; ``problems``: the students
    the grader failed on; ``regrade``: those graded but with checks the grader failed on; ``items``:
    the item analysis (``item_analysis``); ``flagged``: (student, findings) of those whose code
    reaches for the interpreter's internals (``intake.review``); ``isolation``: {what the gradings' children
    lacked of the kit's layers (``runner.shortfall``), None for nothing: how many gradings}, said last,
    where the instructor's eye ends up."""
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


def histogram_png(totals, out_of, path, title):
    """Draw the histogram to ``path``. Returns None, or why no picture was drawn."""
    try:
        import matplotlib
    except ImportError:
        return "matplotlib is not installed (pip install 'attention-lab[class]')"
    matplotlib.use("Agg")  # files only: no display needed
    from matplotlib import pyplot as plt

    counts, edges = bins(totals, out_of)
    fig, ax = plt.subplots(figsize=(8, 4.5), dpi=100)
    ax.bar(edges[:-1], counts, width=[b - a for a, b in zip(edges, edges[1:])], align="edge",
           color="#4c72b0", edgecolor="white")
    if totals:
        for value, style, label in ((statistics.mean(totals), "--", "mean"),
                                    (statistics.median(totals), ":", "median")):
            ax.axvline(value, color="#c44e52", linestyle=style, label=f"{label} {value:.1f}")
        ax.legend(loc="upper center")
    ax.set_xlim(0, out_of)
    ax.set_xticks(edges)
    ax.set_xlabel(f"total points (out of {out_of})")
    ax.set_ylabel("students")
    ax.yaxis.get_major_locator().set_params(integer=True)
    ax.set_title(title)
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)
    return None


def charted(items, most=25):
    """The checks the chart of failures shows: at most ``most`` of those some student failed, most failed
    first (``items``' order). A check no one failed is no bar (a class of three drew 17 bars of "0/1")."""
    return [i for i in items if i.failed][:most]


def item_analysis_png(items, students, path, most=25):
    """The checks most failed as bars (share of the students who failed each), to ``path``. Returns
    None, or why no picture was drawn."""
    try:
        import matplotlib
    except ImportError:
        return "matplotlib is not installed (pip install 'attention-lab[class]')"
    matplotlib.use("Agg")
    from matplotlib import pyplot as plt

    shown = charted(items, most)
    if not shown:
        return "no student failed a check they tried"
    fig, ax = plt.subplots(figsize=(9, 1.2 + 0.32 * max(1, len(shown))), dpi=100)
    labels = [f"{i.check.id}" for i in shown]
    ax.barh(range(len(shown)), [100 * i.rate for i in shown], color="#c44e52")
    ax.set_yticks(range(len(shown)), labels, fontsize=8)
    ax.invert_yaxis()  # the most failed on top
    for y, i in enumerate(shown):
        ax.text(100 * i.rate + 1, y, f"{i.failed}/{i.tried}", va="center", fontsize=7)
    ax.set_xlim(0, 110)
    ax.set_xlabel("students who tried the check and failed it (%)")
    ax.set_title(f"Checks most failed, {students} students")
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)
    return None
