"""``attention-lab grade SUBMISSION --html report.html``: one self-contained page per submission.

The score per stage, every check with its feedback, and the pictures of the student's own
attention (``grading.pictures``) beside the checks they explain. Self-contained: styles inline,
pictures as ``data:`` URIs, no script and nothing fetched, so the file can be mailed, uploaded
to an LMS or opened offline.
"""
from __future__ import annotations

import html

from ..curriculum import STAGES
from ..grading.results import ERROR, PASSED, stage_totals
from .report import untouched

STYLE = """
body { font-family: system-ui, sans-serif; margin: 2rem auto; max-width: 1100px; color: #222; padding: 0 1rem; }
h1 { font-size: 1.5rem; margin-bottom: .2rem; } h2 { font-size: 1.15rem; margin-top: 2rem; }
.sub { color: #555; margin-top: 0; }
table.stages { border-collapse: collapse; margin: 1rem 0; }
table.stages td, table.stages th { padding: .25rem .7rem; border-bottom: 1px solid #ddd; text-align: left; }
.bar { display: inline-block; height: .7rem; background: #4c78a8; vertical-align: middle; }
.barbg { display: inline-block; width: 120px; height: .7rem; background: #e5e5e5; }
.check { border: 1px solid #ddd; border-left: 6px solid #2ca02c; border-radius: 4px; padding: .5rem .8rem;
         margin: .6rem 0; }
.check.failed { border-left-color: #d62728; } .check.error { border-left-color: #ff7f0e; }
.check.untouched { border-left-color: #999; color: #555; }
.check .head { display: flex; justify-content: space-between; gap: 1rem; }
.check .id { font-family: monospace; color: #555; }
pre { white-space: pre-wrap; background: #f7f7f7; padding: .4rem .6rem; margin: .4rem 0; font-size: .85rem; }
.pictures { display: flex; flex-wrap: wrap; gap: 14px; align-items: flex-start; }
figure.picture { margin: .3rem 0; } figure.picture img { max-width: 100%; border: 1px solid #eee; }
figcaption { font-size: .8rem; color: #555; max-width: 520px; }
"""


def render(graded, title="attention-lab report") -> str:
    """The report of ``graded`` (a ``Graded`` from ``grade(..., pictures="all")``) as one HTML page."""
    e = html.escape
    totals = stage_totals(graded.results)
    pictures = graded.pictures_of()
    score = sum(t.points for t in totals.values())
    out_of = sum(t.max_points for t in totals.values())
    rows = "".join(
        f"<tr><td>Stage {s}</td><td>{e(STAGES[s].title)}</td><td>{t.points}/{t.max_points}</td>"
        f"<td><span class='barbg'><span class='bar' style='width:{120 * t.points // max(t.max_points, 1)}px'>"
        f"</span></span></td><td>{t.passed}/{t.checks} checks</td></tr>"
        for s, t in totals.items())
    notes = "".join(f"<p class='sub'>{e(n)}</p>" for n in graded.notes)
    body = [f"<h1>{e(title)}</h1>",
            f"<p class='sub'>{score}/{out_of} points, {sum(r.passed for r in graded.results)}/{len(graded.results)} "
            "checks passed. Pictures show your own code's outputs and the rule they must follow; where the book "
            "printed the numbers, the book's picture is beside yours.</p>", notes,
            f"<table class='stages'><tr><th>stage</th><th></th><th>points</th><th></th><th></th></tr>{rows}</table>"]
    for stage in totals:
        body.append(f"<h2 id='stage{stage}'>Stage {stage}: {e(STAGES[stage].title)}</h2>")
        mine = [r for r in graded.results if r.stage == stage]
        if untouched(mine):  # one row, as the terminal's table says it: not a red box per check of a stub
            body.append(f"<div class='check untouched'><div class='head'><span><b>NOT STARTED</b> none of its "
                        f"{len(mine)} checks has code to run yet ({e(STAGES[stage].module)}.py: each function still "
                        f"raises NotImplementedError)</span><span>0/{totals[stage].max_points}</span></div></div>")
            continue
        for r in mine:
            kind = "passed" if r.status == PASSED else "error" if r.status == ERROR else "failed"
            drawn = pictures.get(r.id, [])
            figures = f"<div class='pictures'>{''.join(p.html() for p in drawn)}</div>" if drawn else ""
            body.append(
                f"<div class='check {kind}' id='{e(r.id)}'><div class='head'><span><b>{kind.upper()}</b> "
                f"{e(r.title)} <span class='id'>{e(r.id)}</span></span><span>{r.points}/{r.max_points}</span></div>"
                f"<pre>{e(r.feedback)}</pre>{figures}</div>")
    return ("<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'>"
            f"<meta name='viewport' content='width=device-width, initial-scale=1'><title>{e(title)}</title>"
            f"<style>{STYLE}</style></head><body>{''.join(body)}</body></html>\n")
