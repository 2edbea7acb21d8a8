"""The reference of stages 6 to 8 against PyTorch's own layers, on every device this machine has.

The stage 7 and 8 judges compare a student's outputs with ``autograder.public.oracles`` (PyTorch's layers
loaded with the probes' weights). These tests hold the reference itself to the same oracles
directly, in this process, on the CPU and on CUDA when present, and check the oracles'
translation of weights and masks by building the layers in a second way.
"""
import os

import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F

from autograder.grading.checks.stage8 import projections
from autograder.probes import stage6, stage7, stage8
from autograder.probes.common import load_by_name
from autograder.public import oracles
from autograder.sandbox.child import exact_float32

# tests/gpu/run.sh requires CUDA: there a missing one fails these tests instead of skipping them.
NO_CUDA = not torch.cuda.is_available() and os.environ.get("ATTENTION_LAB_CUDA_TESTS") != "required"
DEVICES = ["cpu", pytest.param("cuda", marks=pytest.mark.skipif(NO_CUDA, reason="no CUDA here"))]
exact_float32()  # as the grading child computes: no TF32 on CUDA
ATOL = 1e-5


def on(device, *tensors):
    return [None if t is None else t.to(device) for t in tensors]


@pytest.mark.parametrize("device", DEVICES)
def test_scaled_dot_product_attention_matches_torch_functional(ref, device):
    for name, (q, k, v, mask) in stage7.SDPA_CASES.items():
        out, weights = ref["transformer"].scaled_dot_product_attention(*on(device, q, k, v, mask))
        expected = F.scaled_dot_product_attention(*on(device, q, k, v), attn_mask=None if mask is None
                                                  else mask.to(device) != 0)
        rows = (torch.ones(weights.shape, dtype=torch.bool) if mask is None else (mask != 0).expand(weights.shape))
        rows = rows.any(-1)
        assert torch.allclose(out.cpu()[rows], expected.cpu()[rows], atol=ATOL), name
        assert torch.isfinite(out).all() and torch.isfinite(weights).all(), name


@pytest.mark.parametrize("device", DEVICES)
def test_multi_headed_attention_matches_nn_multihead_attention(ref, device):
    for name, (heads, seed, query, kv, mask) in stage7.MHA_CASES.items():
        module = load_by_name(ref["transformer"].MultiHeadedAttention(heads, stage7.D, 0.0),
                              stage7.mha_weights(seed)).to(device).eval()
        q, kv_, m = on(device, query, kv, mask)
        out = module(q, kv_, kv_, m).detach().cpu()
        assert torch.allclose(out, oracles.multihead(stage7.mha_weights(seed), heads, query, kv, mask), atol=ATOL), name


@pytest.mark.parametrize("device", DEVICES)
def test_encoder_layer_matches_nn_transformer_encoder_layer(ref, device):
    weights = stage7.encoder_weights(800)
    layer = load_by_name(ref["transformer"].EncoderLayer(stage7.D, stage7.H, stage7.D_FF, 0.0), weights).to(device)
    for name, mask in stage7.ENCODER_CASES.items():
        out = layer.eval()(*on(device, stage7.X5, mask)).detach().cpu()
        assert torch.allclose(out, oracles.encoder(weights, stage7.H, stage7.D_FF, stage7.X5, mask), atol=ATOL), name


@pytest.mark.parametrize("device", DEVICES)
def test_decoder_layer_matches_nn_transformer_decoder_layer(ref, device):
    weights = stage7.decoder_weights(820)
    layer = load_by_name(ref["transformer"].DecoderLayer(stage7.D, stage7.H, stage7.D_FF, 0.0), weights).to(device)
    for name, (src_mask, tgt_mask) in stage7.DECODER_CASES.items():
        out = layer.eval()(*on(device, stage7.TGT, stage7.MEMORY, src_mask, tgt_mask)).detach().cpu()
        expected = oracles.decoder(weights, stage7.H, stage7.D_FF, stage7.TGT, stage7.MEMORY, src_mask, tgt_mask)
        assert torch.allclose(out, expected, atol=ATOL), name


def test_oracle_masks_agree_with_pytorchs_own_padding_argument():
    """``oracles.pytorch_mask`` (a per-head 3-D attn_mask) against key_padding_mask, which PyTorch builds
    itself, and ``copy_attention`` against the module's own state_dict names."""
    weights = stage7.mha_weights(710)
    module = nn.MultiheadAttention(stage7.D, stage7.H, batch_first=True).eval()
    packed = {"in_proj_weight": torch.cat([weights[f"linears.{i}.weight"] for i in range(3)]),
              "in_proj_bias": torch.cat([weights[f"linears.{i}.bias"] for i in range(3)]),
              "out_proj.weight": weights["linears.3.weight"], "out_proj.bias": weights["linears.3.bias"]}
    module.load_state_dict(packed)
    with torch.no_grad():
        expected = module(stage7.XQ, stage7.MEMORY, stage7.MEMORY, key_padding_mask=stage7.PAD6 == 0)[0]
    got = oracles.multihead(weights, stage7.H, stage7.XQ, stage7.MEMORY, stage7.PAD6.unsqueeze(1))
    assert torch.allclose(got, expected, atol=1e-6)


def test_positional_table_is_the_papers_formula_and_the_reference_stores_it(ref):
    table = oracles.positional_table(50, 6)
    assert table[3, 0] == pytest.approx(torch.sin(torch.tensor(3.0, dtype=torch.float64)).item())
    assert table[3, 1] == pytest.approx(torch.cos(torch.tensor(3.0, dtype=torch.float64)).item())
    assert table[7, 4] == pytest.approx(torch.sin(torch.tensor(7 / 10000 ** (4 / 6), dtype=torch.float64)).item())
    pe = ref["transformer"].PositionalEncoding(6, 0.0, max_len=50).pe
    assert torch.allclose(pe[0].double(), table, atol=1e-5)


def test_fused_projection_equals_three_separate_projections(ref):
    """What the fused check's golden value stands for."""
    p = ref["practical"]
    fused = load_by_name(p.SelfAttentionFused(stage6.DIM), stage6.packed_weights(620)).eval()
    separate = load_by_name(p.MaskedSelfAttention(stage6.DIM, 0.0), stage6.separate_weights(stage6.QKV, 620)).eval()
    assert torch.allclose(fused(stage6.X), separate(stage6.X), atol=1e-6)


@pytest.mark.parametrize("device", DEVICES)
def test_grouped_query_attention_matches_nn_multihead_attention_with_repeated_heads(ref, device):
    for name, (heads, kv_heads, bias) in stage8.GROUPED.items():
        weights = stage8.gqa_weights(heads, kv_heads, bias)
        module = load_by_name(ref["modern"].GroupedQueryAttention(stage8.DIM, stage8.DIM, stage8.CONTEXT, heads,
                                                                  kv_heads, qkv_bias=bias), weights).to(device).eval()
        out = module(stage8.X.to(device))[0].detach().cpu()
        expected = oracles.grouped_query(projections(weights), heads, kv_heads, stage8.X)
        assert torch.allclose(out, expected, atol=ATOL), name


def test_grouped_query_oracle_agrees_with_pytorch_own_grouped_attention():
    """A second way, PyTorch's ``enable_gqa``: it groups query heads as the lab does."""
    for name, (heads, kv_heads, bias) in stage8.GROUPED.items():
        weights, x = stage8.gqa_weights(heads, kv_heads, bias), stage8.X
        b, n, _ = x.shape

        def project(layer, count):
            projected = F.linear(x, weights[f"{layer}.weight"], weights.get(f"{layer}.bias"))
            return projected.view(b, n, count, -1).transpose(1, 2)

        context = F.scaled_dot_product_attention(project("W_query", heads), project("W_key", kv_heads),
                                                 project("W_value", kv_heads), is_causal=True, enable_gqa=True)
        expected = F.linear(context.transpose(1, 2).flatten(2), weights["out_proj.weight"], weights["out_proj.bias"])
        got = oracles.grouped_query(projections(weights), heads, kv_heads, x)
        assert torch.allclose(got, expected, atol=ATOL), name
