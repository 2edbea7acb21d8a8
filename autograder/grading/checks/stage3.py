"""Stage 3 judges: causal masks, CausalAttention, dropout."""
import torch

from ...probes.common import DROPOUT_P
from ...probes.stage3 import SHAPE_CONFIGS, expected_shape
from ...public import book
from ...public.feedback import describe_future
from ..families import layer, seeded, shape_contract
from ..judging import (BIAS_CASES, expect, expect_book, expect_close, expect_golden, expect_rows_sum_to_one, get,
                       same)
from ..pictures import book_weights, seen_weights
from ..registry import NUMERIC, Checks, Fail

CHECKS = Checks(3)
CHECKS.look("CausalAttention", "CausalAttention(3, 2, 6, 0.0)")


def _causal_weights(obs, golden, name):
    weights = get(obs, "book")
    expect(weights.shape == book.CAUSAL_WEIGHTS.shape,
           f"{name}(attn_scores, 2) has shape {tuple(weights.shape)}, expected (6, 6)")
    for w, what in ((weights, f"{name} on the book's scores"), (get(obs, "extra"), f"{name} on other scores")):
        future = describe_future(w, what)
        if future:
            raise Fail(future)
        expect_rows_sum_to_one(w, what)
    expect_book(weights, book.CAUSAL_WEIGHTS, f"{name}(attn_scores, 2)")
    expect_close(get(obs, "extra"), golden["extra"], f"{name} on other scores (d_k = 4)")


@CHECKS.add("s3.mask_multiply", points=2, probe="s3.mask_multiply", devices=NUMERIC,
            title="causal weights by multiplying with a lower-triangular mask and renormalising")
def mask_multiply(obs, ctx):
    _causal_weights(obs, ctx.golden, "causal_weights_by_multiplication")


@CHECKS.add("s3.mask_fill", points=2, probe="s3.mask_fill", devices=NUMERIC,
            title="causal weights by filling the future with -inf before the softmax")
def mask_fill(obs, ctx):
    _causal_weights(obs, ctx.golden, "causal_weights_by_fill")


seeded(CHECKS, "s3.causal", "CausalAttention", 2, book.CAUSAL_ATTENTION, "CausalAttention(3, 2, 6, 0.0)(batch)")


@CHECKS.add("s3.causal.known_weights", points=3, probe="s3.causal.known_weights", devices=NUMERIC,
            title="CausalAttention output with known weights (6 tokens in a context of 8, with and without bias)")
def causal_known(obs, ctx):
    expect_golden(obs, ctx.golden, BIAS_CASES, "CausalAttention")


shape_contract(CHECKS, "s3.causal", 2, SHAPE_CONFIGS, expected_shape,
               "CausalAttention shape contract: batches, short inputs, d_in != d_out, dtype, input untouched")


layer(CHECKS, "s3.causal", "CausalAttention", no_leak=3)


@CHECKS.add("s3.causal.mask_buffer", points=1, probe="s3.causal.mask_buffer",
            title="CausalAttention.mask is a registered buffer, nonzero exactly above the diagonal")
def causal_mask_buffer(obs, ctx):
    result = get(obs)
    expect(result["is_buffer"],
           "CausalAttention.mask is not a registered buffer; use self.register_buffer('mask', ...)")
    expect(result["in_state_dict"], "CausalAttention.mask is not in the state_dict "
           "(registered with persistent=False?); the mask must be saved with the model")
    nonzero = result["nonzero"]
    want = torch.triu(torch.ones(8, 8, dtype=torch.bool), diagonal=1)
    expect(nonzero.shape == want.shape, f"mask has shape {tuple(nonzero.shape)}, expected (8, 8) for context_length 8")
    if not same(nonzero.bool(), want):
        i, j = (nonzero != want).nonzero()[0].tolist()
        raise Fail(f"mask[{i}, {j}] is {'nonzero' if nonzero[i, j] else 'zero'}; the mask must be nonzero "
                   "exactly above the diagonal (torch.triu(..., diagonal=1))")


layer(CHECKS, "s3.causal", "CausalAttention", dropout=3, eval=2, device=2, gradients=1, state_dict=1, titles={
    "state_dict": "CausalAttention's mask is saved and loaded with the state_dict (across devices)",
    "dropout": f"CausalAttention dropout (p={DROPOUT_P}) zeroes attention weights and scales the rest by 1/(1-p)",
    "device": "CausalAttention moves to another device, mask included, and creates nothing on a fixed device"})


CHECKS.pictures(draw={
    "s3.mask_multiply": lambda o: book_weights(o, "causal_weights_by_multiplication", book.CAUSAL_WEIGHTS, True),
    "s3.mask_fill": lambda o: book_weights(o, "causal_weights_by_fill", book.CAUSAL_WEIGHTS, True),
    "s3.causal.seeded": lambda o: seen_weights(o, "CausalAttention(3, 2, 6, 0.0), seed 123", True),
})
