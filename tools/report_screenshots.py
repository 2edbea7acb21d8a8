"""Render reports in a real browser: ``python -m tools.report_screenshots [--out docs/images]``.

Grades the reference, a causal layer that leaks (its mask the wrong way round) and one whose
dropout scales by 1/p, writes each ``--html`` report, opens it in headless Chromium (Debian's
``chromium``, driven by Playwright) and saves a screenshot of the top of each page: the pictures in
docs/images/ are made this way. ``load`` is what the browser test checks a page with.
"""
from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
from pathlib import Path

from autograder.paths import KIT_ROOT
from tools.zoo import assemble, read_entry

CHROMIUM_NAMES = ("chromium", "chromium-browser", "google-chrome")
ENTRIES = {"leak": "mask_polarity_inverted", "dropout": "dropout_scaled_by_1_over_p"}
SHOWN = {"reference": "s3.causal.seeded", "leak": "s3.causal.no_leak", "dropout": "s3.causal.dropout"}  # pictured


def chromium() -> str | None:
    return next((found for name in CHROMIUM_NAMES if (found := shutil.which(name))), None)


STAGES = (1, 3)  # enough for every kind of picture the tests look at, quick to grade


def graded_report(submission, out: Path, stages=STAGES) -> Path:
    """``attention-lab grade SUBMISSION --html OUT``, as a student's instructor runs it."""
    proc = subprocess.run([sys.executable, "-m", "autograder.cli", "grade", str(submission), "--html", str(out),
                           *[a for s in stages for a in ("--stage", str(s))]], capture_output=True, text=True,
                          cwd=KIT_ROOT, timeout=300)
    if proc.returncode != 0 or f"wrote {out}" not in proc.stderr:
        raise RuntimeError(f"grading {submission} wrote no report:\n{proc.stderr[-2000:]}")
    return out


def reports(folder: Path) -> dict[str, Path]:
    """name -> the report of the reference and of each entry of ``ENTRIES``."""
    found = {"reference": graded_report(KIT_ROOT / "solutions", folder / "reference.html")}
    for name, stem in ENTRIES.items():
        entry = KIT_ROOT / "tests" / "zoo" / "wrong" / f"{stem}.py"
        found[name] = graded_report(assemble(entry, read_entry(entry), folder / stem), folder / f"{name}.html")
    return found


def load(page, path: Path, screenshot: Path | None = None, full_page=True, check=None) -> dict:
    """Open ``path`` in a Playwright ``page``: what the browser saw (console errors, page errors,
    each image's natural width, each picture's kind and red cells), and a screenshot if asked: of
    the whole page, or of one ``check``'s box."""
    said = []
    page.on("console", lambda message: said.append(message.text) if message.type == "error" else None)
    page.on("pageerror", lambda exc: said.append(str(exc)))
    page.goto(path.resolve().as_uri(), wait_until="load")
    seen = page.evaluate("""() => ({
        widths: Array.from(document.images).map(i => i.complete ? i.naturalWidth : 0),
        pictures: Array.from(document.querySelectorAll('figure.picture')).map(f => ({
            kind: f.dataset.picture, flagged: Number(f.dataset.flagged), check: f.closest('.check').id,
            shown: f.getBoundingClientRect().height > 0})),
    })""")
    if screenshot is not None:
        screenshot.parent.mkdir(parents=True, exist_ok=True)
        if check is not None:
            page.locator(f"[id='{check}']").screenshot(path=str(screenshot))
        else:
            page.screenshot(path=str(screenshot), full_page=full_page)
    return {**seen, "errors": said}


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", type=Path, default=KIT_ROOT / "docs" / "images")
    args = parser.parse_args(argv)
    from playwright.sync_api import sync_playwright

    browser_path = chromium()
    if browser_path is None:
        sys.exit("no chromium found: apt-get install chromium")
    work = args.out / ".reports"
    made = reports(work)
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=browser_path, args=["--no-sandbox"])
        for name, html in made.items():
            page = browser.new_page(viewport={"width": 1100, "height": 1400})
            seen = load(page, html, args.out / f"report-{name}.png", check=SHOWN[name])
            print(f"{name}: {html.stat().st_size / 1024:.0f} KiB, {len(seen['widths'])} images, "
                  f"errors: {seen['errors'] or 'none'} -> {args.out / f'report-{name}.png'}")
            page.close()
        browser.close()
    shutil.rmtree(work)


if __name__ == "__main__":
    main()
