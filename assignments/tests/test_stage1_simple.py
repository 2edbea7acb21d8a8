"""Stage 1 self-checks: attention without trainable weights (attention_lab/simple.py).

The expected numbers are the ones the book prints for "Your journey starts with one step",
with token 2 ("journey", ``inputs[1]``) as the query.
"""
import pytest
import torch

from book import (ALL_CONTEXT_VECS, ATTN_SCORES_2, ATTN_WEIGHTS, CONTEXT_VEC_2, INPUTS, WEIGHTS_2_BY_SUM,
                  WEIGHTS_2_SOFTMAX)
from lab_checks import expect, expect_book, expect_close, expect_rows_sum_to_one, expect_shape, run, student, tensor

pytestmark = pytest.mark.stage1


SCORES_2 = INPUTS @ INPUTS[1]  # unrounded: the inputs of the normalisation examples
OTHER = torch.randn(4, 5, generator=torch.Generator().manual_seed(0))  # 4 tokens of width 5


def test_attention_scores_loop_gives_the_books_scores_for_journey():
    simple = student("simple")
    scores = run(simple.attention_scores_loop, INPUTS, INPUTS[1])
    expect_book(scores, ATTN_SCORES_2, "attention_scores_loop(inputs, inputs[1])")
    other = run(simple.attention_scores_loop, OTHER, OTHER[0])
    expect_shape(other, (4,), "attention_scores_loop for 4 tokens of width 5")


def test_attention_scores_without_a_loop_gives_the_same_scores():
    simple = student("simple")
    scores = run(simple.attention_scores, INPUTS, INPUTS[1])
    expect_book(scores, ATTN_SCORES_2, "attention_scores(inputs, inputs[1])")
    other = run(simple.attention_scores, OTHER, OTHER[0])
    expect_shape(other, (4,), "attention_scores for 4 tokens of width 5")


def test_normalize_by_sum_gives_the_books_weights():
    simple = student("simple")
    weights = run(simple.normalize_by_sum, SCORES_2)
    expect_book(weights, WEIGHTS_2_BY_SUM, "normalize_by_sum(attn_scores_2)")
    expect_rows_sum_to_one(weights, "normalize_by_sum(attn_scores_2)")


def test_softmax_naive_gives_the_books_weights_and_works_on_the_last_dim():
    simple = student("simple")
    weights = run(simple.softmax_naive, SCORES_2)
    expect_book(weights, WEIGHTS_2_SOFTMAX, "softmax_naive(attn_scores_2)")
    rows = run(simple.softmax_naive, OTHER)
    expect_shape(rows, OTHER.shape, "softmax_naive of a (4, 5) tensor")
    expect_rows_sum_to_one(rows, "softmax_naive of a (4, 5) tensor (softmax over the last dim)")


def test_softmax_stable_gives_the_books_weights_and_stays_finite_for_large_scores():
    simple = student("simple")
    weights = run(simple.softmax_stable, SCORES_2)
    expect_book(weights, WEIGHTS_2_SOFTMAX, "softmax_stable(attn_scores_2)")
    large = torch.tensor([[1000.0, 1002.0, 998.0], [-1000.0, -1003.0, -999.0]])
    result = tensor(run(simple.softmax_stable, large), "softmax_stable(scores near ±1000)")
    expect(bool(torch.isfinite(result).all()),
           "softmax_stable gives nan or inf for scores near ±1000: subtract each row's largest score before exp")
    expect_close(result, torch.softmax(large, dim=-1), "softmax_stable(scores near ±1000)")


def test_context_vector_of_journey_matches_the_book():
    simple = student("simple")
    context = run(simple.context_vector, INPUTS, torch.softmax(SCORES_2, dim=0))
    expect_book(context, CONTEXT_VEC_2, "context_vector(inputs, attn_weights_2)")


def test_attention_weights_all_matches_the_book_and_rows_sum_to_one():
    simple = student("simple")
    weights = run(simple.attention_weights_all, INPUTS)
    expect_shape(weights, (6, 6), "attention_weights_all(inputs)")
    expect_rows_sum_to_one(weights, "attention_weights_all(inputs)")
    expect_book(weights, ATTN_WEIGHTS, "attention_weights_all(inputs)")
    other = run(simple.attention_weights_all, OTHER)
    expect_shape(other, (4, 4), "attention_weights_all for 4 tokens of width 5")


def test_context_vectors_all_matches_the_book():
    simple = student("simple")
    contexts = run(simple.context_vectors_all, INPUTS)
    expect_book(contexts, ALL_CONTEXT_VECS, "context_vectors_all(inputs)")
    other = run(simple.context_vectors_all, OTHER)
    expect_shape(other, (4, 5), "context_vectors_all for 4 tokens of width 5")
