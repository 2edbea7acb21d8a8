"""nanoGPT's ``CausalSelfAttention`` in stage 8's ``FastMultiHeadAttention`` slot, written as nanoGPT writes it.

Source: karpathy/nanoGPT, ``model.py``, class ``CausalSelfAttention`` (commit 3adf61e, 2025-11-12), MIT
licence, Copyright (c) 2022 Andrej Karpathy. The class below is the source's, line for line; only the
adapter after it is ours.

The fast layer's contract is nanoGPT's layer almost exactly: one fused ``qkv`` (nanoGPT's ``c_attn``,
split as ``q, k, v``), ``out_proj`` (``c_proj``), one call of ``F.scaled_dot_product_attention`` with
``is_causal=True`` and ``dropout_p`` only in training. The adapter renames ``c_attn`` and ``c_proj`` and
passes the contract's ``dropout`` and ``qkv_bias`` as nanoGPT's ``config.dropout`` and ``config.bias``.

How it departs from the contract:

- **Square.** Built with ``n_embd = d_out`` (nanoGPT's ``assert`` runs first), then ``ValueError`` when
  ``d_in != d_out``: nanoGPT cuts its heads from the input's own width. Every probe of the fast layer
  is square but one case of ``s8.fast.shapes``, which owns ``d_in != d_out``: this costs that check alone.
- **One setting each for biases and dropout**: ``config.bias`` gives ``out_proj`` a bias only with
  ``qkv_bias``; ``config.dropout`` also drops the layer's output (``resid_dropout``).
- **Divisibility** is an ``assert``.
"""
MODULE = "modern"
HELPERS = ["renamed"]  # _Renamed: the adapter that stores the source's names under the contract's
LOSES = ["s8.fast.shapes", "s8.fast.structure", "s8.fast.divisibility", "s8.fast.dropout"]
ONLY = True  # square: d_in != d_out costs s8.fast.shapes alone
MENTIONS = "d_in=3 to d_out=12"

import math
from types import SimpleNamespace

from torch.nn import functional as F


# ---- karpathy/nanoGPT model.py (MIT), as written ----

class CausalSelfAttention(nn.Module):

    def __init__(self, config):
        super().__init__()
        assert config.n_embd % config.n_head == 0
        # key, query, value projections for all heads, but in a batch
        self.c_attn = nn.Linear(config.n_embd, 3 * config.n_embd, bias=config.bias)
        # output projection
        self.c_proj = nn.Linear(config.n_embd, config.n_embd, bias=config.bias)
        # regularization
        self.attn_dropout = nn.Dropout(config.dropout)
        self.resid_dropout = nn.Dropout(config.dropout)
        self.n_head = config.n_head
        self.n_embd = config.n_embd
        self.dropout = config.dropout
        # flash attention make GPU go brrrrr but support is only in PyTorch >= 2.0
        self.flash = hasattr(torch.nn.functional, 'scaled_dot_product_attention')
        if not self.flash:
            print("WARNING: using slow attention. Flash Attention requires PyTorch >= 2.0")
            # causal mask to ensure that attention is only applied to the left in the input sequence
            self.register_buffer("bias", torch.tril(torch.ones(config.block_size, config.block_size))
                                        .view(1, 1, config.block_size, config.block_size))

    def forward(self, x):
        B, T, C = x.size() # batch size, sequence length, embedding dimensionality (n_embd)

        # calculate query, key, values for all heads in batch and move head forward to be the batch dim
        q, k, v  = self.c_attn(x).split(self.n_embd, dim=2)
        k = k.view(B, T, self.n_head, C // self.n_head).transpose(1, 2) # (B, nh, T, hs)
        q = q.view(B, T, self.n_head, C // self.n_head).transpose(1, 2) # (B, nh, T, hs)
        v = v.view(B, T, self.n_head, C // self.n_head).transpose(1, 2) # (B, nh, T, hs)

        # causal self-attention; Self-attend: (B, nh, T, hs) x (B, nh, hs, T) -> (B, nh, T, T)
        if self.flash:
            # efficient attention using Flash Attention CUDA kernels
            y = torch.nn.functional.scaled_dot_product_attention(q, k, v, attn_mask=None, dropout_p=self.dropout if self.training else 0, is_causal=True)
        else:
            # manual implementation of attention
            att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(k.size(-1)))
            att = att.masked_fill(self.bias[:,:,:T,:T] == 0, float('-inf'))
            att = F.softmax(att, dim=-1)
            att = self.attn_dropout(att)
            y = att @ v # (B, nh, T, T) x (B, nh, T, hs) -> (B, nh, T, hs)
        y = y.transpose(1, 2).contiguous().view(B, T, C) # re-assemble all head outputs side by side

        # output projection
        y = self.resid_dropout(self.c_proj(y))
        return y


# ---- the adapter (ours): the contract's name, arguments and attribute names ----

class FastMultiHeadAttention(_Renamed, CausalSelfAttention):
    RENAMED = {"c_attn": "qkv", "c_proj": "out_proj"}

    def __init__(self, d_in, d_out, context_length, dropout, num_heads, qkv_bias=False):
        super().__init__(SimpleNamespace(n_embd=d_out, n_head=num_heads, block_size=context_length,
                                         dropout=dropout, bias=qkv_bias))
        if d_in != d_out:
            raise ValueError(f"nanoGPT's CausalSelfAttention maps n_embd to n_embd: d_in ({d_in}) must equal "
                             f"d_out ({d_out})")
