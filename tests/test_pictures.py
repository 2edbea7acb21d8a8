"""Pictures of a student's own attention: drawn right, valid SVG, and never from a hidden value."""
import xml.etree.ElementTree as ET

import pytest
import torch
import torch.nn.functional as F

from autograder.grading.grade import draw_all, plan
from autograder.grading.pictures import draw
from autograder.grading.registry import all_checks
from autograder.public import book
from autograder.public.pictures import attention_of, heatmap, show_attention, weight_pictures


def svg_ok(picture):
    root = ET.fromstring(picture.svg)  # well-formed XML, an svg element with a size
    assert root.tag.endswith("svg") and float(root.get("width")) > 0 and float(root.get("height")) > 0
    return root


def test_a_heatmap_outlines_the_rule_and_counts_the_cells_that_break_it():
    m = torch.tensor([[1.0, 0.0], [0.4, 0.6]])
    future = torch.tensor([[False, True], [False, False]])
    clean = heatmap(m, ["a", "b"], ["a", "b"], "t", forbidden=future, flagged=future & (m > 0))
    assert clean.flagged == 0 and svg_ok(clean) is not None
    leaked = heatmap(m.flip(1), ["a", "b"], ["a", "b"], "t", forbidden=future, flagged=future & (m.flip(1) > 0))
    assert leaked.flagged == 1 and "#d62728" in leaked.svg and "#d62728" not in clean.svg


def test_the_note_names_a_row_that_does_not_sum_to_one_nan_included():
    w = torch.full((3, 3), 1 / 3)
    w[1] = 0.71 / 3
    (picture,) = weight_pictures(w, ("a", "b", "c"))
    assert "row 1 (b) sums to 0.71" in picture.caption
    w[2, 0] = float("nan")
    w[1] = 1 / 3
    assert "row 2 (c) sums to nan" in weight_pictures(w, ("a", "b", "c"))[0].caption


def test_the_weights_of_fused_attention_are_seen_too():
    q, k, v = torch.randn(1, 2, 5, 4), torch.randn(1, 2, 5, 4), torch.randn(1, 2, 5, 4)
    _, seen = attention_of(lambda: F.scaled_dot_product_attention(q, k, v, is_causal=True))
    by_hand = torch.softmax((q @ k.transpose(-1, -2) / 2).masked_fill(torch.ones(5, 5).triu(1).bool(), -torch.inf), -1)
    torch.testing.assert_close(seen, by_hand[0])


def test_show_attention_draws_the_books_sentence_per_head_and_flags_a_leak(root, monkeypatch):
    monkeypatch.syspath_prepend(str(root / "solutions"))
    from attention_lab.causal import CausalAttention
    from attention_lab.multihead import MultiHeadAttention

    torch.manual_seed(123)
    one = show_attention(CausalAttention(3, 2, 6, 0.0))
    assert len(one) == 1 and one[0].flagged == 0 and "journey" in one[0].svg and "each row sums to 1" in one[0].caption
    two = show_attention(MultiHeadAttention(3, 2, 6, 0.0, num_heads=2))
    assert [p.title.rsplit(", ", 1)[-1] for p in two] == ["head 0", "head 1"]
    leaky = show_attention(lambda x: torch.softmax(x @ x.T, -1), causal=True)  # no mask at all
    assert leaky[0].flagged == 15 and "data:image/svg+xml;base64," in leaky._repr_html_()
    with pytest.raises(ValueError, match="no attention weights"):
        show_attention(lambda x: x + 1)


def test_pictures_of_hidden_probes_show_the_students_numbers_not_the_references(root, grading_server):
    """Draw every probe of every stage from an observation whose tensors are all zeros: any
    number a picture then shows that is not 0 would have come from somewhere other than the
    student's output. The book's printed weights (public) are the one exception, drawn beside."""
    from autograder.grading import grade as grading

    captured = {}
    real = grading.run_tasks

    def keep(sub, tasks, **kw):
        run = real(sub, tasks, **kw)
        captured.update(run.observations)
        return run

    grading.run_tasks = keep
    try:
        graded = grading.grade(root / "solutions", devices={"cpu"}, pictures="all", server=grading_server)
    finally:
        grading.run_tasks = real
    assert {"s3.causal.leak", "s3.causal.dropout", "s8.cache", "s7.pe.table"} <= set(graded.pictures)
    for pictures in graded.pictures.values():
        for p in pictures:
            svg_ok(p)
    book_numbers = {f"{v:.2f}" for t in (book.ATTN_WEIGHTS, book.CAUSAL_WEIGHTS) for v in t.flatten().tolist()}
    zeroed = {task: _zeros(obs) for task, obs in captured.items() if task.kind == "probe"}
    for check in all_checks():
        for task in plan([check], {"cpu"})[1:]:
            if task not in zeroed:
                continue
            for p in draw(check, zeroed[task]):
                shown = {n for n in _numbers(p.svg)} - {"0.00", "1.00", "nan"}
                if p.title != "the book's weights":
                    assert not shown, f"{check.id}: {p.title} shows {sorted(shown)[:5]} for an output of zeros"
                else:
                    assert shown <= book_numbers


def _zeros(obs):
    if type(obs) is torch.Tensor:
        return torch.zeros_like(obs)
    if isinstance(obs, dict):
        return {k: _zeros(v) for k, v in obs.items()}
    if isinstance(obs, list):
        return [_zeros(v) for v in obs]
    return obs


def _numbers(svg):
    import re

    return re.findall(r">(-?\d+\.\d\d|nan)<", svg)


def test_a_drawing_that_fails_costs_a_picture_not_a_grade(monkeypatch, capsys):
    from autograder.grading import grade as grading
    from autograder.sandbox.protocol import Task

    check = all_checks({3})[0]
    monkeypatch.setattr(grading, "draw", lambda c, o: 1 / 0)
    assert draw_all([check], {Task("probe", check.probe, "cpu"): {"book": torch.eye(6)}}) == {}
    assert "no picture for" in capsys.readouterr().err


def test_padded_keys_are_outlined_and_weights_on_them_are_red(root, tmp_path, grading_server):
    """masked_softmax with the mask's polarity inverted gives the padded keys weight: red there."""
    from autograder.grading.grade import grade
    from tools.zoo import assemble, read_entry

    entry = root / "tests" / "zoo" / "wrong" / "s6_softmax_mask_polarity.py"
    wrong = grade(assemble(entry, read_entry(entry), tmp_path / "wrong"), stages={6}, pictures="all",
                  server=grading_server)
    right = grade(root / "solutions", stages={6}, pictures="all", server=grading_server)
    assert [p.flagged for p in wrong.pictures["s6.softmax"]] == [10]  # 5 queries x 2 padded keys
    assert [p.flagged for p in right.pictures["s6.softmax"]] == [0] and ">pad<" in right.pictures["s6.softmax"][0].svg


def test_a_device_check_shows_what_moved_and_what_stayed_behind(root, tmp_path, grading_server):
    """A mask kept as a plain attribute stays on the cpu when the layer moves: named in red."""
    from autograder.grading.grade import grade
    from tools.zoo import assemble, read_entry

    entry = root / "tests" / "zoo" / "wrong" / "mask_plain_attribute.py"
    wrong = grade(assemble(entry, read_entry(entry), tmp_path / "wrong"), stages={3}, pictures="all",
                  server=grading_server)
    (moved,) = wrong.pictures["s3.causal.device"]
    assert moved.kind == "device" and moved.flagged == 1 and "stayed behind on the cpu" in moved.svg
    (right,) = grade(root / "solutions", stages={3}, pictures="all", server=grading_server).pictures["s3.causal.device"]
    assert right.flagged == 0 and "mask (on meta)" in right.svg


def test_feedback_draws_only_the_probes_of_failed_checks(root, tmp_path, grading_server):
    """grade-all, Gradescope and nbgrader show the pictures of failed checks only: none are drawn
    for a submission that passes, and for a failing one only those of its failed checks' probes."""
    from autograder.grading.grade import grade
    from autograder.grading.registry import registry
    from tools.zoo import assemble, read_entry

    assert grade(root / "solutions", stages={3}, pictures="failed", server=grading_server).pictures == {}
    entry = root / "tests" / "zoo" / "wrong" / "mask_plain_attribute.py"
    wrong = grade(assemble(entry, read_entry(entry), tmp_path / "wrong"), stages={3}, pictures="failed",
                  server=grading_server)
    failed = {registry()[r.id].probe for r in wrong.results if not r.passed}
    assert wrong.pictures and set(wrong.pictures) <= failed, (set(wrong.pictures), failed)


def test_a_sliding_windows_leak_map_outlines_and_flags_what_lies_outside_the_band():
    """Stage 9's band: output t may see inputs t - 2 .. t (window 3); a layer that also sees t - 3 is flagged there."""
    from autograder.grading.registry import registry

    n = 9
    band = torch.ones(n, n).tril().triu(-2)
    wide = torch.ones(n, n).tril().triu(-3)  # window + 1: one input too old per row from t = 3 on
    check = registry()["s9.swa.band"]
    right, = draw(check, {"jacobian": band, "moved": torch.zeros(n), "scale": 1.0})
    wrong, = draw(check, {"jacobian": wide, "moved": torch.zeros(n), "scale": 1.0})
    assert right.flagged == 0 and "only its window of 3" in right.svg
    assert wrong.flagged == n - 3 and "an input it must not see" in wrong.svg
