"""Stage 2 self-checks: self-attention with trainable weights (attention_lab/self_attention.py).

The seeded examples follow the book: ``torch.manual_seed(123)`` before the step-by-step
example and ``SelfAttention_v1(3, 2)``, ``torch.manual_seed(789)`` before ``SelfAttention_v2(3, 2)``.
They only reproduce the printed numbers when the weights are created in the order
query, key, value.
"""
import pytest
import torch
import torch.nn as nn

from book import INPUTS, SA_V1, SA_V2, STEP_CONTEXT_2, STEP_SCORES_2, STEP_WEIGHTS_2
from lab_checks import expect, expect_book, expect_close, expect_rows_sum_to_one, expect_shape, run, student, tensor

pytestmark = pytest.mark.stage2


D_IN, D_OUT = 5, 4  # d_in != d_out, so a transposed weight shows up as a wrong shape
X = torch.randn(7, D_IN, generator=torch.Generator().manual_seed(0))


def _three_results(result, what):
    expect(isinstance(result, (tuple, list)) and len(result) == 3,
           f"{what} should return (attn_scores, attn_weights, context_vec), got {type(result).__name__}")
    names = ("attn_scores", "attn_weights", "context_vec")
    return [tensor(result[i], f"{names[i]} from {what}") for i in range(3)]


def test_attend_one_query_reproduces_the_books_step_by_step_example():
    sa = student("self_attention")
    torch.manual_seed(123)
    W_query, W_key, W_value = (torch.rand(3, 2) for _ in range(3))
    setup = ("torch.manual_seed(123); three torch.rand(3, 2) weights; "
             "attn_scores, attn_weights, context_vec = attend_one_query(inputs[1], inputs, W_query, W_key, W_value)")
    result = run(sa.attend_one_query, INPUTS[1], INPUTS, W_query, W_key, W_value)
    scores, weights, context = _three_results(result, "attend_one_query")
    expect_book(scores, STEP_SCORES_2, "attn_scores", setup)
    expect_book(weights, STEP_WEIGHTS_2, "attn_weights", setup + "\n(the scores are divided by sqrt(d_k), "
                "d_k the width of the keys, before the softmax)")
    expect_book(context, STEP_CONTEXT_2, "context_vec", setup)


def test_attend_one_query_shapes_for_d_in_5_and_d_out_4():
    sa = student("self_attention")
    g = torch.Generator().manual_seed(1)
    W_query, W_key, W_value = (torch.randn(D_IN, D_OUT, generator=g) for _ in range(3))
    what = "attend_one_query for 7 tokens, d_in 5, d_out 4"
    scores, weights, context = _three_results(run(sa.attend_one_query, X[2], X, W_query, W_key, W_value), what)
    expect_shape(scores, (7,), f"attn_scores from {what}")
    expect_shape(weights, (7,), f"attn_weights from {what}")
    expect_shape(context, (D_OUT,), f"context_vec from {what}")
    expect_rows_sum_to_one(weights, f"attn_weights from {what}")


def test_self_attention_v1_with_seed_123_reproduces_the_book():
    sa = student("self_attention")
    torch.manual_seed(123)
    module = run(sa.SelfAttention_v1, 3, 2)
    expect_book(run(module, INPUTS), SA_V1, "out", "torch.manual_seed(123); out = SelfAttention_v1(3, 2)(inputs)")


def test_self_attention_v1_holds_three_d_in_by_d_out_parameters():
    sa = student("self_attention")
    module = run(sa.SelfAttention_v1, D_IN, D_OUT)
    for name in ("W_query", "W_key", "W_value"):
        weight = getattr(module, name, None)
        expect(isinstance(weight, nn.Parameter),
               f"SelfAttention_v1.{name} should be an nn.Parameter, got {type(weight).__name__}")
        expect(tuple(weight.shape) == (D_IN, D_OUT),
               f"SelfAttention_v1({D_IN}, {D_OUT}).{name} has shape {tuple(weight.shape)}, expected (d_in, d_out) "
               f"= ({D_IN}, {D_OUT})")


def test_self_attention_v2_with_seed_789_reproduces_the_book():
    sa = student("self_attention")
    torch.manual_seed(789)
    module = run(sa.SelfAttention_v2, 3, 2)
    expect_book(run(module, INPUTS), SA_V2, "out", "torch.manual_seed(789); out = SelfAttention_v2(3, 2)(inputs)")


def test_self_attention_v2_uses_linear_layers_with_optional_bias():
    sa = student("self_attention")
    for bias in (False, True):
        module = run(sa.SelfAttention_v2, D_IN, D_OUT, qkv_bias=bias)
        for name in ("W_query", "W_key", "W_value"):
            layer = getattr(module, name, None)
            label = f"SelfAttention_v2({D_IN}, {D_OUT}, qkv_bias={bias}).{name}"
            expect(isinstance(layer, nn.Linear), f"{label} should be an nn.Linear, got {type(layer).__name__}")
            expect((layer.in_features, layer.out_features) == (D_IN, D_OUT),
                   f"{label} is nn.Linear({layer.in_features}, {layer.out_features}), expected "
                   f"nn.Linear({D_IN}, {D_OUT})")
            expect((layer.bias is not None) == bias,
                   f"{label} {'has no' if bias else 'has a'} bias; qkv_bias={bias} decides")


def test_both_versions_map_tokens_by_d_in_to_tokens_by_d_out():
    sa = student("self_attention")
    for cls_name in ("SelfAttention_v1", "SelfAttention_v2"):
        module = run(getattr(sa, cls_name), D_IN, D_OUT)
        expect_shape(run(module, X), (7, D_OUT), f"{cls_name}({D_IN}, {D_OUT}) on 7 tokens of width {D_IN}")


def test_copy_v2_into_v1_makes_both_give_the_same_output():
    sa = student("self_attention")
    torch.manual_seed(0)
    v2 = run(sa.SelfAttention_v2, D_IN, D_OUT)
    v1 = run(sa.SelfAttention_v1, D_IN, D_OUT)
    returned = run(sa.copy_v2_into_v1, v2, v1)
    expect(returned is v1, "copy_v2_into_v1(sa_v2, sa_v1) should return sa_v1")
    expect_close(run(v1, X), tensor(run(v2, X), "SelfAttention_v2 output"),
                 "SelfAttention_v1 output after copy_v2_into_v1 (compared with SelfAttention_v2's)")
