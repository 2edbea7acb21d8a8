"""Stage 1 judges: attention without trainable weights."""
import torch

from ...public import book
from ..judging import (close, describe_row_sums, expect, expect_book, expect_close, expect_rows_sum_to_one, get,
                       naming_the_part)
from ..pictures import book_weights
from ..registry import NUMERIC, Checks, Fail

CHECKS = Checks(1)
CHECKS.look("attention_weights_all", "attention_weights_all")


def _book_and_extra(obs, golden, printed, what):
    expect_book(get(obs, "book"), printed, what)
    expect_close(get(obs, "extra"), golden["extra"], f"{what} on other inputs")


def printed(check_id, points, title, output, call):
    """A function of simple.py that the book ran: ``call`` on the book's inputs gives the book's printed
    ``output``, and on other inputs the reference's."""
    CHECKS.add(check_id, points=points, probe=check_id, devices=NUMERIC, title=title)(
        lambda obs, ctx: _book_and_extra(obs, ctx.golden, output, call))


printed("s1.scores_loop", 1, "attention_scores_loop gives the dot product with every token", book.ATTN_SCORES_2,
        "attention_scores_loop(inputs, inputs[1])")


printed("s1.scores", 1, "attention_scores (vectorised) gives the same scores", book.ATTN_SCORES_2,
        "attention_scores(inputs, inputs[1])")


printed("s1.normalize_by_sum", 1, "normalize_by_sum divides by the sum", book.WEIGHTS_2_BY_SUM,
        "normalize_by_sum(inputs @ inputs[1])")


@CHECKS.add("s1.softmax_naive", points=1, probe="s1.softmax_naive", devices=NUMERIC,
            title="softmax_naive follows the definition")
def softmax_naive(obs, ctx):
    try:
        _book_and_extra(obs, ctx.golden, book.WEIGHTS_2_SOFTMAX, "softmax_naive(inputs @ inputs[1])")
    except Fail as wrong:
        extra = get(obs, "extra")
        if extra.dim() == 2 and close(extra.sum(dim=0), torch.ones(extra.shape[1])):
            raise Fail(f"each column of softmax_naive(x) for a 2-D x sums to 1, where each row should: it "
                       "normalises over dim 0 (the book's .sum(dim=0), right for its one row of scores); for a matrix "
                       "of scores, one row per query, the softmax runs over the last dim (dim=-1). "
                       f"{wrong}") from None
        if extra.dim() == 2:  # as clear as the self-check: which row, and what it sums to
            problem = describe_row_sums(extra, "softmax_naive(x) for a 2-D x, one row of scores per query,")
            if problem:
                raise Fail(f"{problem}. {wrong}") from None
        raise


@CHECKS.add("s1.softmax_stable", points=2, probe="s1.softmax_stable", devices=NUMERIC,
            title="softmax_stable is right and stays finite for large scores")
def softmax_stable(obs, ctx):
    expect_book(get(obs, "book"), book.WEIGHTS_2_SOFTMAX, "softmax_stable(attn_scores_2)")
    extra = get(obs, "extra")
    expect_rows_sum_to_one(extra, "softmax_stable(x) for a 2-D x (softmax over the last dim)")
    expect_close(extra, ctx.golden["extra"], "softmax_stable(x) for a 2-D x")
    large = get(obs, "large")
    expect(bool(large.isfinite().all()), "softmax_stable gives nan or inf for scores near 1000; "
           "subtract the largest score of each row before exp")
    expect_close(large, ctx.golden["large"], "softmax_stable(scores near ±1000)")


printed("s1.context_vector", 1, "context_vector weights the inputs", book.CONTEXT_VEC_2,
        "context_vector(inputs, softmax(inputs @ inputs[1]))")


@CHECKS.add("s1.attention_weights_all", points=2, probe="s1.attention_weights_all", devices=NUMERIC,
            title="attention_weights_all: every token against every token")
def attention_weights_all(obs, ctx):
    weights = get(obs, "book")
    expect(weights.dim() == 2, f"attention_weights_all(inputs) has shape {tuple(weights.shape)}, expected (6, 6)")
    expect_rows_sum_to_one(weights, "your attention weights")
    _book_and_extra(obs, ctx.golden, book.ATTN_WEIGHTS, "attention_weights_all(inputs)")


@CHECKS.add("s1.context_vectors_all", points=2, probe="s1.context_vectors_all", devices=NUMERIC,
            title="context_vectors_all: all context vectors at once", twin="s1.context_vectors_all.twin")
def context_vectors_all(obs, ctx):
    # The book's context_vectors_all calls attention_weights_all: a mistake there is named as the cause.
    naming_the_part(obs, ctx, lambda o: _book_and_extra(o, ctx.golden, book.ALL_CONTEXT_VECS,
                                                        "context_vectors_all(inputs)"),
                    "attention_weights_all", own="context_vectors_all itself")


CHECKS.pictures(draw={
    "s1.attention_weights_all": lambda o: book_weights(o, "attention_weights_all(inputs)", book.ATTN_WEIGHTS, False),
})
