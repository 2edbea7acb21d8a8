"""Stage 3 self-checks: causal attention with dropout (attention_lab/causal.py).

The book's causal weights come from the scores of the seed-789 ``SelfAttention_v2(3, 2)``;
these checks compute those scores themselves, so stage 3 can be checked before stage 2 passes.
"""
import pytest
import torch
import torch.nn as nn

from book import BATCH, CAUSAL_ATTENTION, CAUSAL_WEIGHTS, INPUTS
from lab_checks import (expect, expect_book, expect_close, expect_mask, expect_no_future, expect_rows_sum_to_one,
                        expect_shape, run, student, tensor)

pytestmark = pytest.mark.stage3


D_IN, D_OUT, CONTEXT = 5, 4, 8


def book_scores():
    """The scores of the book's seed-789 ``SelfAttention_v2(3, 2)``: queries @ keys.T (d_k = 2)."""
    torch.manual_seed(789)
    W_query, W_key = nn.Linear(3, 2, bias=False), nn.Linear(3, 2, bias=False)
    with torch.no_grad():
        return W_query(INPUTS) @ W_key(INPUTS).T


def x(*shape, seed=0):
    return torch.randn(*shape, generator=torch.Generator().manual_seed(seed))


def test_causal_weights_by_multiplication_reproduce_the_book():
    causal = student("causal")
    weights = run(causal.causal_weights_by_multiplication, book_scores(), 2)
    expect_book(weights, CAUSAL_WEIGHTS, "weights", "weights = causal_weights_by_multiplication(attn_scores, d_k=2)"
                " for the scores of the seed-789 SelfAttention_v2(3, 2)", causal=True)


def test_causal_weights_by_fill_reproduce_the_book():
    causal = student("causal")
    weights = run(causal.causal_weights_by_fill, book_scores(), 2)
    expect_book(weights, CAUSAL_WEIGHTS, "weights", "weights = causal_weights_by_fill(attn_scores, d_k=2)"
                " for the scores of the seed-789 SelfAttention_v2(3, 2)", causal=True)


def test_both_mask_builders_hide_the_future_sum_to_one_and_agree_on_other_scores():
    causal = student("causal")
    scores = x(7, 7, seed=1) * 2
    results = {}
    for name in ("causal_weights_by_multiplication", "causal_weights_by_fill"):
        what = f"{name} on 7 x 7 scores, d_k=4"
        weights = run(getattr(causal, name), scores, 4)
        expect_shape(weights, (7, 7), what)
        expect_no_future(weights, what)
        expect_rows_sum_to_one(weights, what)
        results[name] = tensor(weights, what)
    expect_close(results["causal_weights_by_fill"], results["causal_weights_by_multiplication"],
                 "causal_weights_by_fill on 7 x 7 scores (compared with causal_weights_by_multiplication)")


def test_causal_attention_with_seed_123_reproduces_the_book():
    causal = student("causal")
    torch.manual_seed(123)
    module = run(causal.CausalAttention, 3, 2, 6, 0.0)
    expect_book(run(module, BATCH), CAUSAL_ATTENTION.expand(2, 6, 2), "out",
                "torch.manual_seed(123); out = CausalAttention(3, 2, 6, 0.0)(batch), batch = two copies of inputs")


def test_causal_attention_output_is_batch_by_tokens_by_d_out_and_input_is_unchanged():
    causal = student("causal")
    module = run(causal.CausalAttention, D_IN, D_OUT, CONTEXT, 0.0)
    for shape in ((1, CONTEXT, D_IN), (3, 5, D_IN), (2, 1, D_IN)):
        what = f"CausalAttention({D_IN}, {D_OUT}, {CONTEXT}, 0.0) on a batch of shape {shape}"
        inputs = x(*shape, seed=2)
        before = inputs.clone()
        expect_shape(run(module, inputs), (shape[0], shape[1], D_OUT), what)
        expect(torch.equal(inputs, before), f"{what} changed its input x in place; work on new tensors")


def test_causal_attention_registers_a_mask_buffer_hiding_the_future():
    causal = student("causal")
    module = run(causal.CausalAttention, D_IN, D_OUT, CONTEXT, 0.0)
    buffers = dict(module.named_buffers())
    expect("mask" in buffers, "CausalAttention has no buffer named `mask`: create it with "
           "self.register_buffer('mask', ...) so it moves with .to(device)")
    expect_mask(buffers["mask"], CONTEXT, f"CausalAttention(..., context_length={CONTEXT}, ...).mask")


def test_dropout_changes_the_output_in_training_mode_only():
    causal = student("causal")
    torch.manual_seed(0)
    module = run(causal.CausalAttention, D_IN, D_OUT, CONTEXT, 0.5)
    inputs = x(2, 6, D_IN, seed=3)
    module.eval()
    torch.manual_seed(1)
    first = tensor(run(module, inputs), "CausalAttention output in eval mode")
    torch.manual_seed(2)
    second = run(module, inputs)
    expect_close(second, first, "CausalAttention(dropout=0.5) in eval mode, called twice "
                 "(dropout must be off after .eval())")
    module.train()
    torch.manual_seed(3)
    trained = tensor(run(module, inputs), "CausalAttention output in train mode")
    expect(not torch.allclose(trained, first),
           "CausalAttention(dropout=0.5) gives the same output in train mode as in eval mode: "
           "apply the nn.Dropout to the attention weights")
