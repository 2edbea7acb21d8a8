"""``attention-lab grade --html``: one self-contained page with the student's own pictures."""
import re
import shutil

import pytest

from autograder.grading.registry import all_checks
from tools.report_screenshots import STAGES
from tools.report_screenshots import reports as graded_reports


@pytest.fixture(scope="module")
def reports(tmp_path_factory):
    """The pages of the reference, of a causal layer whose mask is the wrong way round ("leak") and
    of one whose dropout scales by 1/p, each written by ``attention-lab grade --html``."""
    return {name: path.read_text() for name, path in graded_reports(tmp_path_factory.mktemp("reports")).items()}


def test_the_report_is_self_contained_and_lists_every_check(reports):
    for page in reports.values():
        assert page.startswith("<!DOCTYPE html>") and "<script" not in page
        assert not re.findall(r"""(?:src|href)=["'](?!data:)""", page), "something would be fetched"
        for check in all_checks(set(STAGES)):
            assert f"id='{check.id}'" in page


def test_the_reference_shows_its_weights_beside_the_books_and_breaks_no_rule(reports):
    page = reports["reference"]
    assert "the book&#x27;s weights" in page or "the book's weights" in page
    assert 'data-picture="leak" data-flagged="0"' in page
    assert not re.findall(r'data-flagged="[1-9]', page)


def test_a_leaking_layer_shows_its_leak_map_with_the_leaking_cells(reports):
    page = reports["leak"]
    flagged = re.findall(r'data-picture="leak" data-flagged="(\d+)"', page)
    assert flagged and int(flagged[0]) > 0
    no_leak = page[page.index("id='s3.causal.no_leak'"):]
    assert no_leak.index('data-picture="leak"') < no_leak.index("<div class='check", 10)  # under its own check


def test_an_untouched_stage_is_one_not_started_row_and_a_started_one_lists_its_checks(tmp_path, root):
    """The stubs' report says "not started" once a stage, as the terminal's table does, not a red box for each
    of its checks; a stage with one function written lists every check, the failed ones included."""
    from autograder.cli import main

    folder = tmp_path / "sub"
    shutil.copytree(root / "assignments" / "attention_lab", folder / "attention_lab")
    page = tmp_path / "report.html"
    assert main(["grade", str(folder), "--stage", "1", "--stage", "3", "--html", str(page)]) == 0
    html = page.read_text()
    assert html.count("NOT STARTED") == 2 and "<b>FAILED</b>" not in html
    simple = folder / "attention_lab" / "simple.py"
    solved = (root / "solutions" / "attention_lab" / "simple.py").read_text()
    start = solved.index("def attention_scores_loop")
    simple.write_text(simple.read_text() + "\n\n" + solved[start:solved.index("\ndef ", start + 1)])  # one function
    assert main(["grade", str(folder), "--stage", "1", "--stage", "3", "--html", str(page)]) == 0
    html = page.read_text()
    assert html.count("NOT STARTED") == 1 and "<b>PASSED</b>" in html and "<b>FAILED</b>" in html
    assert all(f"id='{c.id}'" in html for c in all_checks({1}))


def test_the_sizes_benchmarks_md_gives_for_the_reports_are_what_grade_writes(tmp_path, root):
    """docs/benchmarks.md's sizes of the reference's and the stubs' reports, within 15 %: a number the docs
    give that can be measured is measured here."""
    from autograder.cli import main

    said = re.search(r"writes a report of (\d+) KiB, and the stubs' report, each stage one \"not started\" row, "
                     r"(\d+) KiB", (root / "docs" / "benchmarks.md").read_text().replace("\n", " "))
    assert said, "docs/benchmarks.md no longer gives the reports' sizes in the sentence this test reads"
    for folder, kib in (("solutions", int(said.group(1))), ("assignments", int(said.group(2)))):
        page = tmp_path / f"{folder}.html"
        assert main(["grade", str(root / folder), "--html", str(page)]) == 0
        assert abs(page.stat().st_size / 1024 - kib) <= 0.15 * kib, (folder, page.stat().st_size / 1024, kib)
