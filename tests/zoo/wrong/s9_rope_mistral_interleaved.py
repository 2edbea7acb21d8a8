"""Mistral's rotary embedding (``precompute_freqs_cis`` and ``apply_rotary_emb``: complex numbers, pairs
interleaved, the layout of Meta's Llama too) under stage 9's ``rope_tables`` and ``apply_rope``.

Source: mistralai/mistral-inference, ``src/mistral_inference/rope.py`` (commit 2557e12, 2026-02-26),
functions ``precompute_freqs_cis`` and ``apply_rotary_emb`` as written; Apache License 2.0, Copyright
Mistral AI. Only the adapter after them is ours: it converts between the two ways of holding the same
angles (Mistral's complex ``freqs_cis``, (positions, head_dim / 2); the contract's ``cos`` and ``sin``,
each angle written twice side by side) and between layouts of ``x`` (Mistral's (seq, heads, head_dim)
per sequence; the contract's (batch, heads, seq, head_dim)).

How it departs from the contract, and what each costs:
- **Interleaved pairs.** ``view_as_complex`` on ``reshape(..., -1, 2)`` turns dimensions 2i and 2i + 1
  together by angle i; this lab pairs i with i + head_dim // 2 (rotate half). ``apply_rope``'s checks
  name the layout, and so do the rotary layer's, whose rotation is this ``apply_rope``.
- **No ValueError** past the tables (a RuntimeError from broadcasting) or for an odd head_dim.
"""
MODULE = "frontier"
LOSES = ["s9.rope.formula", "s9.rope.offset", "s9.rope.contract", "s9.rope.odd", "s9.ropegqa.known",
         "s9.ropegqa.cache", "s9.ropegqa.pieces"]
ONLY = True
MENTIONS = {"s9.rope.formula": "interleaved", "s9.ropegqa.known": "interleaved", "s9.ropegqa.cache": "interleaved",
            "s9.ropegqa.pieces": "interleaved"}

from typing import Tuple


# ---- mistralai/mistral-inference src/mistral_inference/rope.py (Apache-2.0), as written ----

def precompute_freqs_cis(dim: int, end: int, theta: float) -> torch.Tensor:
    freqs = 1.0 / (theta ** (torch.arange(0, dim, 2)[: (dim // 2)].float() / dim))
    t = torch.arange(end, device=freqs.device)
    freqs = torch.outer(t, freqs).float()
    return torch.polar(torch.ones_like(freqs), freqs)  # complex64


def apply_rotary_emb(
    xq: torch.Tensor,
    xk: torch.Tensor,
    freqs_cis: torch.Tensor,
) -> Tuple[torch.Tensor, torch.Tensor]:
    xq_ = torch.view_as_complex(xq.float().reshape(*xq.shape[:-1], -1, 2))
    xk_ = torch.view_as_complex(xk.float().reshape(*xk.shape[:-1], -1, 2))
    freqs_cis = freqs_cis[:, None, :]
    xq_out = torch.view_as_real(xq_ * freqs_cis).flatten(-2)
    xk_out = torch.view_as_real(xk_ * freqs_cis).flatten(-2)
    return xq_out.type_as(xq), xk_out.type_as(xk)


# ---- the adapter (ours): the contract's tables and signature ----

def rope_tables(head_dim, context_length, base=10000.0):
    freqs_cis = precompute_freqs_cis(head_dim, context_length, base)  # (context_length, head_dim // 2)
    return torch.cat([freqs_cis.real] * 2, dim=-1), torch.cat([freqs_cis.imag] * 2, dim=-1)


def apply_rope(x, cos, sin, offset=0):
    seq, half = x.shape[-2], x.shape[-1] // 2
    freqs_cis = torch.complex(cos[offset:offset + seq, :half].float(), sin[offset:offset + seq, :half].float())
    turned, _ = apply_rotary_emb(x.transpose(1, 2), x.transpose(1, 2), freqs_cis)  # (batch, seq, heads, head_dim)
    return turned.transpose(1, 2)
