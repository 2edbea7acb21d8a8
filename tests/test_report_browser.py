"""The HTML report in a real browser (headless Chromium driven by Playwright): every picture
loads, nothing goes wrong in the console, and a leaking layer's report shows its leak map with
the leaking cells. CI sets ATTENTION_LAB_BROWSER_TESTS=required, so there the test fails rather
than skips when the browser is missing; a screenshot of each report is kept in test-artifacts/."""
import pytest

from autograder.paths import KIT_ROOT
from tools.report_screenshots import load, reports

ARTIFACTS = KIT_ROOT / "test-artifacts"


@pytest.fixture(scope="module")
def pages(tmp_path_factory):
    return reports(tmp_path_factory.mktemp("reports"))


@pytest.mark.parametrize("name", ["reference", "leak", "dropout"])
def test_the_report_renders_in_a_browser(browser, pages, name):
    page = browser.new_page(viewport={"width": 1100, "height": 1400})
    try:
        seen = load(page, pages[name], ARTIFACTS / f"report-{name}.png")
    finally:
        page.close()
    assert seen["errors"] == [], seen["errors"]
    assert seen["widths"] and min(seen["widths"]) > 0, f"an image did not load: {seen['widths']}"
    assert all(p["shown"] for p in seen["pictures"])
    flagged = {(p["kind"], p["check"]): p["flagged"] for p in seen["pictures"]}
    if name == "leak":
        assert flagged[("leak", "s3.causal.no_leak")] > 0, flagged
    elif name == "dropout":
        assert ("dropout", "s3.causal.dropout") in flagged, flagged
    else:
        assert not any(flagged.values()), flagged
    assert (ARTIFACTS / f"report-{name}.png").stat().st_size > 10_000
