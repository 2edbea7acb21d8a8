"""``attention-lab grade --html``: one self-contained page with the student's own pictures."""
import re

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
