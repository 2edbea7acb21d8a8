"""Stage 4 self-checks: multi-head attention (attention_lab/multihead.py).

The seeded examples follow the book: ``torch.manual_seed(123)``, then the layer with
d_in=3, d_out=2, context_length=6, dropout=0.0, num_heads=2, on the batch of two copies
of the inputs.
"""
import pytest
import torch
import torch.nn as nn

from book import BATCH, GPT2_MHA_PARAMETERS, MHA, MHA_WRAPPER
from lab_checks import expect, expect_book, expect_later_tokens_unseen, expect_raises, expect_shape, run, student

pytestmark = pytest.mark.stage4

D_IN, CONTEXT = 5, 8


def x(*shape, seed=0):
    return torch.randn(*shape, generator=torch.Generator().manual_seed(seed))


def _seeded_matches_the_book(name, printed):
    cls = getattr(student("multihead"), name)
    torch.manual_seed(123)
    module = run(cls, 3, 2, 6, 0.0, num_heads=2)
    expect_book(run(module, BATCH), printed.expand(2, -1, -1), "out",
                f"torch.manual_seed(123); out = {name}(3, 2, 6, 0.0, num_heads=2)(batch), "
                "batch = two copies of inputs")


def test_wrapper_with_seed_123_reproduces_the_book():
    _seeded_matches_the_book("MultiHeadAttentionWrapper", MHA_WRAPPER)


def test_wrapper_runs_one_causal_attention_per_head_and_concatenates_them():
    mh = student("multihead")
    CausalAttention = student("causal").CausalAttention
    for heads in (1, 3):
        module = run(mh.MultiHeadAttentionWrapper, D_IN, 2, CONTEXT, 0.0, num_heads=heads)
        label = f"MultiHeadAttentionWrapper({D_IN}, 2, {CONTEXT}, 0.0, num_heads={heads})"
        mods = getattr(module, "heads", None)
        expect(isinstance(mods, nn.ModuleList), f"{label}.heads should be an nn.ModuleList, "
               f"got {type(mods).__name__}")
        expect(len(mods) == heads, f"{label}.heads holds {len(mods)} modules, expected {heads}")
        expect(all(isinstance(m, CausalAttention) for m in mods),
               f"every entry of {label}.heads should be a CausalAttention from causal.py")
        expect_shape(run(module, x(3, 5, D_IN)), (3, 5, 2 * heads), f"{label} on a batch of shape (3, 5, {D_IN})")


def test_multi_head_attention_with_seed_123_reproduces_the_book():
    _seeded_matches_the_book("MultiHeadAttention", MHA)


def test_multi_head_attention_output_is_batch_by_tokens_by_d_out():
    mh = student("multihead")
    for shape, d_out, heads in (((1, CONTEXT, D_IN), 4, 1), ((3, 5, D_IN), 4, 2), ((2, 6, D_IN), 12, 4)):
        module = run(mh.MultiHeadAttention, D_IN, d_out, CONTEXT, 0.0, num_heads=heads)
        module.eval()
        what = f"MultiHeadAttention({D_IN}, {d_out}, {CONTEXT}, 0.0, num_heads={heads}) on a batch of shape {shape}"
        expect_shape(run(module, x(*shape)), (shape[0], shape[1], d_out), what)


def test_multi_head_attention_rejects_d_out_not_divisible_by_num_heads():
    mh = student("multihead")
    expect_raises(ValueError, mh.MultiHeadAttention, 4, 6, CONTEXT, 0.0, num_heads=4,
                  what="MultiHeadAttention(4, 6, 8, 0.0, num_heads=4)", because=" (6 is not divisible by 4 heads)")


def test_multi_head_attention_of_gpt2_size_has_2360064_parameters():
    mh = student("multihead")
    module = run(mh.MultiHeadAttention, 768, 768, 1024, 0.0, num_heads=12)
    counted = sum(p.numel() for p in module.parameters())
    expect(counted == GPT2_MHA_PARAMETERS,
           f"MultiHeadAttention(768, 768, 1024, 0.0, num_heads=12) has {counted:,} parameters, the book says "
           f"{GPT2_MHA_PARAMETERS:,}: three bias-free d_out x d_in projections and out_proj with bias "
           "(the mask is a buffer, not a parameter)")
    yours = run(mh.count_parameters, module)
    expect(yours == GPT2_MHA_PARAMETERS, f"count_parameters(GPT-2 sized MultiHeadAttention) is {yours!r}, "
           f"expected {GPT2_MHA_PARAMETERS:,}")


def test_count_parameters_counts_trainable_scalars_only():
    mh = student("multihead")
    small = nn.Sequential(nn.Linear(7, 3), nn.Linear(3, 2, bias=False))  # 7*3 + 3 + 3*2
    got = run(mh.count_parameters, small)
    expect(got == 30, "count_parameters(nn.Sequential(nn.Linear(7, 3), nn.Linear(3, 2, bias=False))) "
           f"is {got!r}, expected 30")
    small[1].weight.requires_grad_(False)  # frozen: not trainable any more
    small.register_buffer("mask", torch.ones(4, 4))
    got = run(mh.count_parameters, small)
    expect(got == 24, f"count_parameters is {got!r} for a module with 24 trainable scalars, 6 frozen ones and "
           "a buffer of 16: count only parameters with requires_grad")


def test_pytorch_variant_keeps_the_shape_and_needs_d_in_equal_to_d_out():
    mh = student("multihead")
    module = run(mh.MultiHeadAttentionPyTorch, 6, 6, CONTEXT, 0.0, num_heads=2)
    module.eval()
    label = f"MultiHeadAttentionPyTorch(6, 6, {CONTEXT}, 0.0, num_heads=2)"
    expect(isinstance(getattr(module, "mha", None), nn.MultiheadAttention),
           f"{label}.mha should be an nn.MultiheadAttention")
    expect_shape(run(module, x(3, 5, 6)), (3, 5, 6), f"{label} on a batch of shape (3, 5, 6)")
    expect_raises(ValueError, mh.MultiHeadAttentionPyTorch, 4, 6, CONTEXT, 0.0, num_heads=2,
                  what=f"MultiHeadAttentionPyTorch(4, 6, {CONTEXT}, 0.0, num_heads=2)",
                  because=" (nn.MultiheadAttention needs d_in == d_out)")


def test_pytorch_variant_never_lets_a_token_see_a_later_token():
    mh = student("multihead")
    module = run(mh.MultiHeadAttentionPyTorch, 6, 6, CONTEXT, 0.0, num_heads=2)
    expect_later_tokens_unseen(module, 6, f"MultiHeadAttentionPyTorch(6, 6, {CONTEXT}, 0.0, num_heads=2)", hint=(
        "nn.MultiheadAttention adds a float attn_mask to the scores; pass a bool mask (True = hidden) or -inf "
        "above the diagonal (stage 3's float mask of 0s and 1s only adds 1 to the scores of later tokens)"))
