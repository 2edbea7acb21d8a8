"""The score distribution of a class, as text and as a histogram (PNG)."""
from __future__ import annotations

import statistics

from ...curriculum import STAGES

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


def text_summary(rows, out_of, stage_max, problems=(), regrade=()):
    """``rows``: (student, total, {stage: points}) of every graded student; ``problems``: the students
    the grader failed on; ``regrade``: those graded but with checks the grader failed on."""
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
    return "\n".join(lines) + "\n"


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
