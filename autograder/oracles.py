"""PyTorch's own layers, loaded with the kit's known weights: the expected values of stage 7.

The student's layers are loaded by name (``linears.0.weight``, ``norm1.bias``, ...); here the
same tensors go into ``nn.MultiheadAttention``, ``nn.TransformerEncoderLayer`` and
``nn.TransformerDecoderLayer`` (post-norm, ReLU, ``batch_first=True``, dropout 0), and the
masks are translated from the lab's convention (1 = may attend) to PyTorch's (True = hidden).
This runs in the grading process, on the CPU; student code never runs here.
"""
from __future__ import annotations

import torch
import torch.nn as nn
import torch.nn.functional as F


def _load(module, tensors):
    with torch.no_grad():
        for name, value in tensors.items():
            module.get_parameter(name).copy_(value)
    return module.eval()


def _mha_tensors(weights, prefix, into):
    """The four ``linears`` of MultiHeadedAttention as nn.MultiheadAttention's packed projection."""
    def lin(i, kind):
        return weights[f"{prefix}linears.{i}.{kind}"]

    return {f"{into}in_proj_weight": torch.cat([lin(i, "weight") for i in range(3)]),
            f"{into}in_proj_bias": torch.cat([lin(i, "bias") for i in range(3)]),
            f"{into}out_proj.weight": lin(3, "weight"), f"{into}out_proj.bias": lin(3, "bias")}


def _ffn_and_norms(weights, norms):
    kinds = ("weight", "bias")
    tensors = {f"linear{i}.{kind}": weights[f"feed_forward.w_{i}.{kind}"] for i in (1, 2) for kind in kinds}
    tensors.update({f"norm{i}.{kind}": weights[f"norm{i}.{kind}"] for i in norms for kind in kinds})
    return tensors


def hidden(mask, batch, heads, n_q, n_k):
    """A lab mask (broadcasting to (batch, n_q, n_k), 1 = visible) as PyTorch's 3-D attn_mask:
    (batch * heads, n_q, n_k), True = hidden, batch-major as nn.MultiheadAttention expects."""
    if mask is None:
        return None
    return (mask.expand(batch, n_q, n_k) == 0).repeat_interleave(heads, dim=0)


def attention(query, key, value, mask=None):
    """F.scaled_dot_product_attention with a lab mask (its bool mask means True = may attend)."""
    return F.scaled_dot_product_attention(query, key, value, attn_mask=None if mask is None else mask != 0)


def multihead(weights, heads, query, kv, mask=None):
    d = query.shape[-1]
    module = _load(nn.MultiheadAttention(d, heads, batch_first=True), _mha_tensors(weights, "", ""))
    with torch.no_grad():
        mask = hidden(mask, query.shape[0], heads, query.shape[1], kv.shape[1])
        return module(query, kv, kv, attn_mask=mask, need_weights=False)[0]


def encoder(weights, heads, d_ff, x, mask=None):
    d = x.shape[-1]
    layer = nn.TransformerEncoderLayer(d, heads, d_ff, dropout=0.0, batch_first=True)
    _load(layer, {**_mha_tensors(weights, "self_attn.", "self_attn."), **_ffn_and_norms(weights, (1, 2))})
    with torch.no_grad():
        return layer(x, src_mask=hidden(mask, x.shape[0], heads, x.shape[1], x.shape[1]))


def decoder(weights, heads, d_ff, x, memory, src_mask=None, tgt_mask=None):
    d, (batch, n_tgt), n_src = x.shape[-1], x.shape[:2], memory.shape[1]
    layer = nn.TransformerDecoderLayer(d, heads, d_ff, dropout=0.0, batch_first=True)
    _load(layer, {**_mha_tensors(weights, "self_attn.", "self_attn."),
                  **_mha_tensors(weights, "src_attn.", "multihead_attn."), **_ffn_and_norms(weights, (1, 2, 3))})
    with torch.no_grad():
        return layer(x, memory, tgt_mask=hidden(tgt_mask, batch, heads, n_tgt, n_tgt),
                     memory_mask=hidden(src_mask, batch, heads, n_tgt, n_src))


def positional_table(max_len, d_model):
    """The paper's formula, in float64: sin on even dimensions, cos on odd ones."""
    pos = torch.arange(max_len, dtype=torch.float64).unsqueeze(1)
    two_i = torch.arange(0, d_model, 2, dtype=torch.float64)
    angle = pos / 10000 ** (two_i / d_model)
    table = torch.zeros(max_len, d_model, dtype=torch.float64)
    table[:, 0::2], table[:, 1::2] = torch.sin(angle), torch.cos(angle)
    return table
