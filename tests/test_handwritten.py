"""``confine.HandWritten``: library attention is refused however it is reached, from its Python name
down to the kernel, and attention written by hand passes (in this process: no child needed)."""
import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F

from autograder.sandbox.confine import TOOK_OFF, HandWritten, Refused

Q = torch.randn(2, 3, 5, 4, requires_grad=True)
X = torch.randn(2, 5, 8)
MHA = nn.MultiheadAttention(8, 2, batch_first=True)
ENCODER = nn.TransformerEncoderLayer(8, 2, 16, dropout=0.0, batch_first=True).eval()
NATIVE_ARGS = (X, X, X, 8, 2, MHA.in_proj_weight, MHA.in_proj_bias, MHA.out_proj.weight, MHA.out_proj.bias)


def functions_off(call):
    """``call`` with torch functions switched off: no function mode sees it, only the dispatcher."""
    def run():
        with torch._C.DisableTorchFunction():
            return call()
    return run


def no_grad(call):
    def run():
        with torch.no_grad():
            return call()
    return run


# what is called -> what the student is told they used
FORMS = {
    "F.sdpa": (lambda: F.scaled_dot_product_attention(Q, Q, Q), "F.scaled_dot_product_attention"),
    "torch._C._nn": (lambda: torch._C._nn.scaled_dot_product_attention(Q, Q, Q), "F.scaled_dot_product_attention"),
    "aten op": (lambda: torch.ops.aten.scaled_dot_product_attention(Q, Q, Q),
                "F.scaled_dot_product_attention (torch.ops.aten.scaled_dot_product_attention)"),
    "aten overload": (lambda: torch.ops.aten.scaled_dot_product_attention.default(Q, Q, Q),
                      "F.scaled_dot_product_attention (torch.ops.aten.scaled_dot_product_attention)"),
    "CPU kernel": (lambda: torch.ops.aten._scaled_dot_product_flash_attention_for_cpu(Q, Q, Q),
                   "(torch.ops.aten._scaled_dot_product_flash_attention_for_cpu)"),
    "math path": (lambda: torch.ops.aten._scaled_dot_product_attention_math(Q, Q, Q),
                  "(torch.ops.aten._scaled_dot_product_attention_math)"),
    "torch binding": (lambda: torch._scaled_dot_product_flash_attention_for_cpu(Q, Q, Q),
                      "(torch._scaled_dot_product_flash_attention_for_cpu)"),
    "nn.MultiheadAttention": (lambda: MHA(X, X, X), "nn.MultiheadAttention"),
    "native MHA": (lambda: torch._native_multi_head_attention(*NATIVE_ARGS), "nn.MultiheadAttention"),
    "aten native MHA": (lambda: torch.ops.aten._native_multi_head_attention(*NATIVE_ARGS),
                        "nn.MultiheadAttention (torch.ops.aten._native_multi_head_attention)"),
    # Below the function mode: only the dispatch mode sees these.
    "F.sdpa, functions off": (functions_off(lambda: F.scaled_dot_product_attention(Q, Q, Q, is_causal=True)),
                              "F.scaled_dot_product_attention (aten::_scaled_dot_product_flash_attention_for_cpu)"),
    "F.sdpa float64, functions off": (
        functions_off(lambda: F.scaled_dot_product_attention(*[Q.double()] * 3)),
        "(aten::_scaled_dot_product_flash_attention_for_cpu)"),
    "F.sdpa with dropout, functions off": (
        functions_off(lambda: F.scaled_dot_product_attention(Q, Q, Q, dropout_p=0.5)),
        "F.scaled_dot_product_attention (aten::_safe_softmax)"),
    "fused MHA, functions off": (functions_off(lambda: MHA(X, X, X, need_weights=False)),
                                 "(aten::_scaled_dot_product_flash_attention_for_cpu)"),
    "encoder fast path, functions off": (functions_off(no_grad(lambda: ENCODER(X))),
                                         "nn.TransformerEncoderLayer (aten::_transformer_encoder_layer_fwd)"),
    "function mode popped": (lambda: (torch._C._pop_torch_function_stack(), F.scaled_dot_product_attention(Q, Q, Q)),
                             "(aten::_scaled_dot_product_flash_attention_for_cpu)"),
}


@pytest.mark.parametrize("form", FORMS)
def test_library_attention_is_refused_and_named(form):
    call, named = FORMS[form]
    hand = HandWritten()
    with hand:
        with pytest.raises((Refused, RuntimeError)):  # TorchScript and autograd wrap what they meet
            call()
    assert hand.used is not None and named in hand.used, hand.used
    assert torch._C._len_torch_function_stack() == torch._C._len_torch_dispatch_stack() == 0


def test_attention_by_hand_passes_with_grad_masks_dropout_and_float64():
    hand = HandWritten()
    with hand:
        for dtype in (torch.float32, torch.float64):
            q = Q.detach().to(dtype).requires_grad_()
            scores = (q @ q.transpose(-2, -1) / 2).masked_fill(torch.ones(5, 5, dtype=torch.bool).triu(1), -torch.inf)
            F.dropout(scores.softmax(-1), 0.5).matmul(q).sum().backward()
    assert hand.used is None


def test_taking_the_guard_off_the_stack_counts_as_use():
    hand = HandWritten()
    with hand:
        torch._C._pop_torch_function_stack()
        torch._C._pop_torch_dispatch_stack(None)
    assert hand.used == TOOK_OFF
    assert torch._C._len_torch_function_stack() == torch._C._len_torch_dispatch_stack() == 0
