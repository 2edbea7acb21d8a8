"""PyTorch's own attention layers, wired to the lab's layers: the oracles of stages 6 to 8.

Two users, one wiring. The public self-checks copy a student's own projections into
``nn.MultiheadAttention`` & co. (``copy_attention``); the hidden graders load the kit's known
weights into them, in the grading process, where no student code runs. Both translate masks
from the lab's convention (1 = may attend) to PyTorch's (True = hidden) with ``pytorch_mask``.
Only torch here: the build copies this file beside the public self-checks.
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from types import SimpleNamespace
from typing import Protocol

import torch
import torch.nn as nn
import torch.nn.functional as F


class Projection(Protocol):
    """A linear layer as the oracles read it: ``nn.Linear``, or a ``SimpleNamespace`` of known weights."""

    @property
    def weight(self) -> torch.Tensor: ...

    @property
    def bias(self) -> torch.Tensor | None: ...


def copy_attention(attention: nn.MultiheadAttention, projections: Sequence[Projection]) -> nn.MultiheadAttention:
    """Copies four linear layers (queries, keys, values, output; anything with ``weight`` and
    ``bias``) into ``nn.MultiheadAttention``: the first three stacked into in_proj, the last as
    out_proj."""
    with torch.no_grad():
        attention.in_proj_weight.copy_(torch.cat([p.weight for p in projections[:3]]))
        attention.in_proj_bias.copy_(torch.cat([_bias(p) for p in projections[:3]]))
        attention.out_proj.weight.copy_(projections[3].weight)
        attention.out_proj.bias.copy_(_bias(projections[3]))
    return attention


def _bias(projection: Projection) -> torch.Tensor:
    """A layer's bias, or zeros for a layer without one (``bias=False``)."""
    return torch.zeros(projection.weight.shape[0]) if projection.bias is None else projection.bias


def pytorch_mask(mask: torch.Tensor | None, batch: int, heads: int, n_q: int, n_k: int) -> torch.Tensor | None:
    """A mask that broadcasts to (batch, heads, n_q, n_k) with 0 = hidden, as PyTorch's 3-D
    ``attn_mask``: (batch * heads, n_q, n_k) with True = hidden (None stays None)."""
    if mask is None:
        return None
    return (mask == 0).expand(batch, heads, n_q, n_k).reshape(batch * heads, n_q, n_k)


def _projections(weights: Mapping[str, torch.Tensor], prefix: str) -> list[Projection]:
    """The four ``linears`` of MultiHeadedAttention, from a dict of known weights."""
    return [SimpleNamespace(weight=weights[f"{prefix}linears.{i}.weight"], bias=weights[f"{prefix}linears.{i}.bias"])
            for i in range(4)]


def _load(module: nn.Module, tensors: Mapping[str, torch.Tensor]) -> nn.Module:
    with torch.no_grad():
        for name, value in tensors.items():
            module.get_parameter(name).copy_(value)
    return module.eval()


def _ffn_and_norms(weights: Mapping[str, torch.Tensor], norms: tuple[int, ...]) -> dict[str, torch.Tensor]:
    kinds = ("weight", "bias")
    tensors = {f"linear{i}.{kind}": weights[f"feed_forward.w_{i}.{kind}"] for i in (1, 2) for kind in kinds}
    tensors.update({f"norm{i}.{kind}": weights[f"norm{i}.{kind}"] for i in norms for kind in kinds})
    return tensors


def _head_mask(mask: torch.Tensor | None, batch: int, heads: int, n_q: int, n_k: int) -> torch.Tensor | None:
    """MultiHeadedAttention's mask (the same for every head) as PyTorch's ``attn_mask``."""
    return None if mask is None else pytorch_mask(mask.unsqueeze(1), batch, heads, n_q, n_k)


def attention(query: torch.Tensor, key: torch.Tensor, value: torch.Tensor,
              mask: torch.Tensor | None = None) -> torch.Tensor:
    """F.scaled_dot_product_attention with a lab mask (its bool mask means True = may attend)."""
    return F.scaled_dot_product_attention(query, key, value, attn_mask=None if mask is None else mask != 0)


def multihead(weights: Mapping[str, torch.Tensor], heads: int, query: torch.Tensor, kv: torch.Tensor,
              mask: torch.Tensor | None = None) -> torch.Tensor:
    d = query.shape[-1]
    module = copy_attention(nn.MultiheadAttention(d, heads, batch_first=True), _projections(weights, "")).eval()
    with torch.no_grad():
        mask = _head_mask(mask, query.shape[0], heads, query.shape[1], kv.shape[1])
        output: torch.Tensor = module(query, kv, kv, attn_mask=mask, need_weights=False)[0]
        return output


def encoder(weights: Mapping[str, torch.Tensor], heads: int, d_ff: int, x: torch.Tensor,
            mask: torch.Tensor | None = None) -> torch.Tensor:
    d = x.shape[-1]
    layer = nn.TransformerEncoderLayer(d, heads, d_ff, dropout=0.0, batch_first=True)
    copy_attention(layer.self_attn, _projections(weights, "self_attn."))
    _load(layer, _ffn_and_norms(weights, (1, 2)))
    with torch.no_grad():
        output: torch.Tensor = layer(x, src_mask=_head_mask(mask, x.shape[0], heads, x.shape[1], x.shape[1]))
        return output


def decoder(weights: Mapping[str, torch.Tensor], heads: int, d_ff: int, x: torch.Tensor, memory: torch.Tensor,
            src_mask: torch.Tensor | None = None, tgt_mask: torch.Tensor | None = None) -> torch.Tensor:
    d, (batch, n_tgt), n_src = x.shape[-1], x.shape[:2], memory.shape[1]
    layer = nn.TransformerDecoderLayer(d, heads, d_ff, dropout=0.0, batch_first=True)
    copy_attention(layer.self_attn, _projections(weights, "self_attn."))
    copy_attention(layer.multihead_attn, _projections(weights, "src_attn."))
    _load(layer, _ffn_and_norms(weights, (1, 2, 3)))
    with torch.no_grad():
        output: torch.Tensor = layer(x, memory, tgt_mask=_head_mask(tgt_mask, batch, heads, n_tgt, n_tgt),
                                     memory_mask=_head_mask(src_mask, batch, heads, n_tgt, n_src))
        return output


def positional_table(max_len: int, d_model: int) -> torch.Tensor:
    """The paper's formula, in float64: sin on even dimensions, cos on odd ones."""
    pos = torch.arange(max_len, dtype=torch.float64).unsqueeze(1)
    two_i = torch.arange(0, d_model, 2, dtype=torch.float64)
    angle = pos / 10000 ** (two_i / d_model)
    table = torch.zeros(max_len, d_model, dtype=torch.float64)
    table[:, 0::2], table[:, 1::2] = torch.sin(angle), torch.cos(angle)
    return table


def repeat_kv_heads(projection: Projection, num_heads: int, num_kv_heads: int) -> Projection:
    """A key or value projection of ``num_kv_heads`` heads, widened to ``num_heads`` heads: kv head
    j's rows are repeated for each query head of its group (query heads j * g to j * g + g - 1)."""
    groups = num_heads // num_kv_heads

    def widen(t: torch.Tensor | None) -> torch.Tensor | None:
        # Tensor.unflatten is a Python method of torch's without annotations
        return None if t is None else t.unflatten(0, (num_kv_heads, -1)).repeat_interleave(groups, dim=0).flatten(0, 1)  # type: ignore[no-untyped-call]

    return SimpleNamespace(weight=widen(projection.weight), bias=widen(projection.bias))


def grouped_query(projections: Sequence[Projection], num_heads: int, num_kv_heads: int,
                  x: torch.Tensor) -> torch.Tensor:
    """Causal grouped-query attention, as ``nn.MultiheadAttention`` computes it once every key/value
    head is repeated for its group. ``projections``: query, key, value and output layers (anything
    with ``weight`` and ``bias``); the query layer must map d to d, as nn.MultiheadAttention does."""
    query, key, value, out = projections
    wide = [query, repeat_kv_heads(key, num_heads, num_kv_heads), repeat_kv_heads(value, num_heads, num_kv_heads), out]
    module = copy_attention(nn.MultiheadAttention(query.weight.shape[0], num_heads, batch_first=True), wide).eval()
    n = x.shape[1]
    with torch.no_grad():
        output: torch.Tensor = module(x, x, x, attn_mask=torch.ones(n, n, dtype=torch.bool).triu(1),
                                      need_weights=False)[0]
        return output

