"""Stage 5 self-checks: the causal mask as a plain attribute or as a buffer (attention_lab/buffers.py).

Both classes compute what ``CausalAttention`` computes, so the book's seed-123 example
(created in the order query, key, value) gives the same numbers for both.
"""
import pytest
import torch

from book import BATCH, CAUSAL_ATTENTION
from lab_checks import expect, expect_book, expect_mask, expect_shape, run, student

pytestmark = pytest.mark.stage5

WITHOUT, WITH = "CausalAttentionWithoutBuffers", "CausalAttentionWithBuffer"
D_IN, D_OUT, CONTEXT = 5, 4, 8


def _seeded_matches_the_book(name):
    buffers = student("buffers")
    torch.manual_seed(123)
    module = run(getattr(buffers, name), 3, 2, 6, 0.0)
    expect_book(run(module, BATCH), CAUSAL_ATTENTION.expand(2, 6, 2), "out",
                f"torch.manual_seed(123); out = {name}(3, 2, 6, 0.0)(batch), batch = two copies of inputs")


def test_causal_attention_without_buffers_reproduces_the_book():
    _seeded_matches_the_book(WITHOUT)


def test_causal_attention_with_buffer_reproduces_the_book():
    _seeded_matches_the_book(WITH)


def test_without_buffers_keeps_the_mask_as_a_plain_tensor_attribute():
    buffers = student("buffers")
    module = run(getattr(buffers, WITHOUT), D_IN, D_OUT, CONTEXT, 0.0)
    mask = getattr(module, "mask", None)
    expect(isinstance(mask, torch.Tensor), f"{WITHOUT}.mask should be a tensor, got {type(mask).__name__}")
    expect("mask" not in dict(module.named_buffers()),
           f"{WITHOUT} registers `mask` as a buffer; this class keeps it as a plain attribute (self.mask = ...)")


def test_with_buffer_registers_the_mask_as_a_buffer():
    buffers = student("buffers")
    module = run(getattr(buffers, WITH), D_IN, D_OUT, CONTEXT, 0.0)
    expect("mask" in dict(module.named_buffers()),
           f"{WITH} has no buffer named `mask`: create it with self.register_buffer('mask', ...)")


def test_both_masks_hide_exactly_the_tokens_after_each_token():
    buffers = student("buffers")
    for name in (WITHOUT, WITH):
        module = run(getattr(buffers, name), D_IN, D_OUT, CONTEXT, 0.0)
        expect_mask(getattr(module, "mask", None), CONTEXT, f"{name}(..., context_length={CONTEXT}, ...).mask")


def test_both_handle_fewer_tokens_than_the_context_length():
    buffers = student("buffers")
    for name in (WITHOUT, WITH):
        module = run(getattr(buffers, name), D_IN, D_OUT, CONTEXT, 0.0)
        inputs = torch.randn(3, 5, D_IN, generator=torch.Generator().manual_seed(0))
        expect_shape(run(module, inputs), (3, 5, D_OUT),
                     f"{name}({D_IN}, {D_OUT}, context_length={CONTEXT}, 0.0) on a batch of shape (3, 5, {D_IN})")
