"""Stage 6 self-checks: self-attention as model code writes it (attention_lab/practical.py).

Masks follow the file's convention: 1 = a real token (may be attended to), 0 = padding
(hidden). Where PyTorch's own attention serves as the expected value, it runs with *your*
layers' weights, in eval mode with dropout 0. PyTorch gives nan for a query that sees no key
at all, so a sentence that is all padding is only checked for a finite output.
"""
import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F

from lab_checks import (expect, expect_close, expect_linear, expect_raises, expect_rows_sum_to_one, expect_shape, run,
                        student, tensor)
from oracles import copy_attention, pytorch_mask

pytestmark = pytest.mark.stage6

DIM, HIDDEN, HEADS = 6, 8, 2
PADDING = torch.tensor([[1, 1, 1, 1, 1], [1, 1, 1, 0, 0]])  # sentence 2 has 3 tokens and 2 pads
CAUSAL = torch.tril(torch.ones(5, 5, dtype=torch.long))    # one (seq, seq) pattern shared by all


def x(*shape, seed=0):
    return torch.randn(*shape, generator=torch.Generator().manual_seed(seed))


def _masked_attention(dropout=0.0):
    """Your MaskedSelfAttention(DIM), in eval mode, with its q, k, v checked."""
    module = run(student("practical").MaskedSelfAttention, DIM, dropout=dropout)
    module.eval()
    label = f"MaskedSelfAttention({DIM})"
    return module, [expect_linear(getattr(module, n, None), DIM, DIM, f"{label}.{n}") for n in "qkv"]


def _multi_head(dropout=0.0):
    """Your MultiHeadSelfAttention(HIDDEN, HEADS), in eval mode, with its four projections checked."""
    module = run(student("practical").MultiHeadSelfAttention, HIDDEN, HEADS, dropout=dropout)
    module.eval()
    label = f"MultiHeadSelfAttention({HIDDEN}, {HEADS})"
    names = ("q_proj", "k_proj", "v_proj", "o_proj")
    return module, [expect_linear(getattr(module, n, None), HIDDEN, HIDDEN, f"{label}.{n}") for n in names]


def test_masked_softmax_hides_masked_keys_and_keeps_fully_hidden_rows_finite():
    practical = student("practical")
    scores = x(2, 3, 5, seed=1) * 3
    mask = torch.tensor([[[1, 1, 1, 0, 0]], [[0, 0, 0, 0, 0]]])  # (2, 1, 5): broadcasts over the 3 queries
    setup = ("weights = masked_softmax(scores, mask), scores of shape (2, 3, 5), "
             "mask = [[[1, 1, 1, 0, 0]], [[0, 0, 0, 0, 0]]] of shape (2, 1, 5)")
    weights = tensor(run(practical.masked_softmax, scores, mask), "masked_softmax(scores, mask)")
    expect_shape(weights, (2, 3, 5), "masked_softmax(scores, mask)")
    expect(torch.isfinite(weights).all(), f"{setup}\nweights holds nan or inf: sentence 2 hides every key; fill "
           "with torch.finfo(scores.dtype).min (finite), not -inf, and that row stays finite")
    expect((weights[0, :, 3:] == 0).all(), f"{setup}\nweights[0, :, 3:] is {weights[0, :, 3:].tolist()}: "
           "a hidden key (mask 0) must get weight exactly 0: fill its score with torch.finfo(scores.dtype).min "
           "before the softmax")
    expect_rows_sum_to_one(weights, "masked_softmax(scores, mask)")
    expected = torch.cat([torch.softmax(scores[:1, :, :3], dim=-1), torch.zeros(1, 3, 2)], dim=-1)
    expected = torch.cat([expected, torch.full((1, 3, 5), 0.2)])  # every key hidden: all equal scores, uniform
    expect_close(weights, expected, "weights", setup=setup)
    expect_close(run(practical.masked_softmax, scores, None), torch.softmax(scores, dim=-1),
                 "masked_softmax(scores, None)", setup="with mask=None it is a plain softmax over the last dim")


def test_fused_qkv_equals_three_separate_projections():
    fused = run(student("practical").SelfAttentionFused, DIM)
    separate, (q, k, v) = _masked_attention()
    qkv = expect_linear(getattr(fused, "qkv", None), DIM, 3 * DIM, f"SelfAttentionFused({DIM}).qkv")
    with torch.no_grad():
        qkv.weight.copy_(torch.cat([q.weight, k.weight, v.weight]))
        qkv.bias.copy_(torch.cat([q.bias, k.bias, v.bias]))
    for shape in ((2, 5, DIM), (1, 1, DIM)):
        inputs = x(*shape, seed=2)
        expected = tensor(run(separate, inputs), f"MaskedSelfAttention({DIM}) output")
        expect_close(run(fused, inputs), expected, "fused(x)", setup=(
            f"fused = SelfAttentionFused({DIM}), separate = MaskedSelfAttention({DIM}, dropout=0.0) in eval mode, "
            "fused.qkv.weight = cat(separate.q.weight, separate.k.weight, separate.v.weight) and qkv.bias likewise: "
            f"fused(x) should equal separate(x), here for x of shape {shape}, no mask\n"
            "(split the output of qkv into queries, keys, values in that order; scale the scores by 1/sqrt(dim))"))


def test_masked_self_attention_matches_pytorch_with_and_without_a_padding_mask():
    module, (q, k, v) = _masked_attention()
    inputs = x(2, 5, DIM, seed=3)
    queries, keys, values = (layer(inputs) for layer in (q, k, v))
    for mask in (None, PADDING):
        setup = (f"out = MaskedSelfAttention({DIM}, dropout=0.0)(x, attention_mask), eval mode, "
                 f"x of shape (2, 5, {DIM}), attention_mask = {None if mask is None else mask.tolist()}; expected: "
                 "F.scaled_dot_product_attention(q(x), k(x), v(x)) with your q, k, v and the padded keys hidden")
        expected = F.scaled_dot_product_attention(queries, keys, values,
                                                  attn_mask=None if mask is None else mask[:, None, :] != 0)
        expect_close(run(module, inputs, mask), expected, "out", setup=setup)


def test_padded_inputs_change_nothing_for_real_tokens_and_all_padding_gives_no_nan():
    module, _ = _masked_attention()
    mask = torch.tensor([[1, 1, 1, 1, 1], [1, 1, 1, 0, 0], [0, 0, 0, 0, 0]])  # sentence 3 is all padding
    inputs = x(3, 5, DIM, seed=4)
    changed = torch.where(mask[..., None] == 0, x(3, 5, DIM, seed=5) * 10, inputs)  # new values at the pads only
    setup = (f"MaskedSelfAttention({DIM}, dropout=0.0), eval mode, x of shape (3, 5, {DIM}), "
             f"attention_mask = {mask.tolist()}")
    before = tensor(run(module, inputs, mask), "MaskedSelfAttention output")
    expect_shape(before, (3, 5, DIM), f"MaskedSelfAttention({DIM}) on x of shape (3, 5, {DIM})")
    expect(torch.isfinite(before).all(), f"{setup}\nthe output holds nan or inf: sentence 3 is all padding, so its "
           "queries see no key; fill hidden scores with a finite number (masked_softmax), not -inf")
    after = tensor(run(module, changed, mask), "MaskedSelfAttention output")
    expected = torch.where(mask[..., None] == 1, before, after)  # only the real tokens must stay the same
    expect_close(after, expected, "out", setup=f"{setup}\nthen x changed at the padded positions only: the "
                 "outputs of the real tokens (attention_mask 1) must stay the same, padded keys are hidden")


def test_a_batch_by_seq_mask_acts_like_its_batch_by_seq_by_seq_expansion():
    module, _ = _masked_attention()
    inputs = x(2, 5, DIM, seed=6)
    expanded = PADDING[:, None, :].expand(2, 5, 5)  # [b, i, j] = PADDING[b, j]: every query hides the same keys
    expected = tensor(run(module, inputs, expanded), f"MaskedSelfAttention({DIM}) output with a (2, 5, 5) mask")
    expect_close(run(module, inputs, PADDING), expected, "out", setup=(
        f"out = MaskedSelfAttention({DIM}, dropout=0.0)(x, attention_mask) with attention_mask = {PADDING.tolist()} "
        "of shape (2, 5), compared with the same call given its (2, 5, 5) expansion: a (batch, seq) mask hides keys, "
        "so it needs a query axis (unsqueeze(1)) before it meets the (batch, seq, seq) scores"))


def test_multi_head_self_attention_matches_nn_multihead_attention():
    module, projections = _multi_head()
    pytorch = copy_attention(nn.MultiheadAttention(HIDDEN, HEADS, batch_first=True), projections).eval()
    inputs = x(2, 5, HIDDEN, seed=7)
    masks = {"None": None, f"{PADDING.tolist()}[:, None, None, :], shape (2, 1, 1, 5)": PADDING[:, None, None, :],
             "a causal (5, 5) tril of ones": CAUSAL}
    for described, mask in masks.items():
        setup = (f"out = MultiHeadSelfAttention({HIDDEN}, {HEADS}, dropout=0.0)(x, attention_mask), eval mode, x of "
                 f"shape (2, 5, {HIDDEN}), attention_mask = {described}; expected: nn.MultiheadAttention({HIDDEN}, "
                 f"{HEADS}, batch_first=True) holding your q_proj, k_proj, v_proj, o_proj\n"
                 f"(each head has width head_dim = {HIDDEN // HEADS} and scales its scores by 1/sqrt(head_dim))")
        expected = pytorch(inputs, inputs, inputs, attn_mask=pytorch_mask(mask, 2, HEADS, 5, 5), need_weights=False)[0]
        expect_close(run(module, inputs, mask), expected, "out", setup=setup)


def test_multi_head_padding_mask_acts_like_its_expansion_over_heads_and_queries():
    module, _ = _multi_head()
    inputs = x(2, 5, HIDDEN, seed=8)
    padding = PADDING[:, None, None, :]
    expected = tensor(run(module, inputs, padding.expand(2, HEADS, 5, 5)),
                      f"MultiHeadSelfAttention output with a (2, {HEADS}, 5, 5) mask")
    expect_close(run(module, inputs, padding), expected, "out", setup=(
        f"out = MultiHeadSelfAttention({HIDDEN}, {HEADS}, dropout=0.0)(x, attention_mask) with the (2, 1, 1, 5) "
        f"padding mask {PADDING.tolist()}[:, None, None, :], compared with the same call given its expansion to "
        f"(2, {HEADS}, 5, 5): pass the mask to masked_softmax as it is, it broadcasts over heads and queries"))


def test_multi_head_self_attention_rejects_hidden_dim_not_divisible_by_num_heads():
    practical = student("practical")
    expect_raises(ValueError, practical.MultiHeadSelfAttention, 10, 4, what="MultiHeadSelfAttention(10, 4)",
                  because=" (hidden_dim 10 is not divisible by 4 heads)")


def test_attention_dropout_is_off_in_eval_mode_only():
    for make, width, mask in ((_masked_attention, DIM, PADDING), (_multi_head, HIDDEN, PADDING[:, None, None, :])):
        module, _ = make(dropout=0.5)
        name = type(module).__name__
        inputs = x(2, 5, width, seed=9)
        torch.manual_seed(1)
        first = tensor(run(module, inputs, mask), f"{name} output in eval mode")
        torch.manual_seed(2)
        expect_close(run(module, inputs, mask), first, "second out", setup=(
            f"{name}(..., dropout=0.5) in eval mode, called twice on the same x: dropout must be off after .eval(), "
            "so the second out equals the first"))
        module.train()
        torch.manual_seed(3)
        trained = tensor(run(module, inputs, mask), f"{name} output in train mode")
        expect(not torch.allclose(trained, first), f"{name}(..., dropout=0.5) gives the same output in train mode "
               "as in eval mode: apply an nn.Dropout to the attention weights")
