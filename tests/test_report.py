"""``attention-lab grade --html``: one self-contained page with the student's own pictures."""
import re
import subprocess
import sys

import pytest

from autograder.grading.registry import all_checks
from tools.zoo import assemble, read_entry

STAGES = ["1", "3"]


def report(root, tmp_path, submission, name):
    out = tmp_path / f"{name}.html"
    proc = subprocess.run([sys.executable, "-m", "autograder.cli", "grade", str(submission), "--html", str(out),
                           *[a for s in STAGES for a in ("--stage", s)]], capture_output=True, text=True,
                          cwd=root, timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert f"wrote {out}" in proc.stderr
    return out.read_text()


@pytest.fixture(scope="module")
def reports(root, tmp_path_factory):
    """The reports of the reference and of a causal layer whose mask is the wrong way round."""
    tmp = tmp_path_factory.mktemp("reports")
    entry = root / "tests" / "zoo" / "wrong" / "mask_polarity_inverted.py"
    leaky = assemble(entry, read_entry(entry), tmp / "leaky")
    return {"reference": report(root, tmp, root / "solutions", "reference"),
            "leaky": report(root, tmp, leaky, "leaky"), "folder": tmp}


def test_the_report_is_self_contained_and_lists_every_check(reports):
    for page in (reports["reference"], reports["leaky"]):
        assert page.startswith("<!DOCTYPE html>") and "<script" not in page
        assert not re.findall(r"""(?:src|href)=["'](?!data:)""", page), "something would be fetched"
        for check in all_checks({int(s) for s in STAGES}):
            assert f"id='{check.id}'" in page


def test_the_reference_shows_its_weights_beside_the_books_and_breaks_no_rule(reports):
    page = reports["reference"]
    assert "the book&#x27;s weights" in page or "the book's weights" in page
    assert 'data-picture="leak" data-flagged="0"' in page
    assert not re.findall(r'data-flagged="[1-9]', page)


def test_a_leaking_layer_shows_its_leak_map_with_the_leaking_cells(reports):
    page = reports["leaky"]
    flagged = re.findall(r'data-picture="leak" data-flagged="(\d+)"', page)
    assert flagged and int(flagged[0]) > 0
    no_leak = page[page.index("id='s3.causal.no_leak'"):]
    assert no_leak.index('data-picture="leak"') < no_leak.index("<div class='check", 10)  # under its own check
