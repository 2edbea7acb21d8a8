"""minGPT's ``CausalSelfAttention`` in stage 8's ``FastMultiHeadAttention`` slot, written as minGPT writes it.

Source: karpathy/minGPT, ``mingpt/model.py``, class ``CausalSelfAttention`` (commit 37baab7, 2023-01-08),
MIT licence, Copyright (c) 2020 Andrej Karpathy. The class below is the source's, line for line; only
the adapter after it is ours.

The fast layer's contract is minGPT's layout: one fused ``qkv`` (minGPT's ``c_attn``, rows
``[W_query; W_key; W_value]``, split in that order) and ``out_proj`` (``c_proj``). The adapter renames
those two and configures: ``attn_pdrop`` is the contract's ``dropout``, ``resid_pdrop`` 0.0 (the
contract's layer has no dropout after its projection). minGPT's causal buffer keeps its name ``bias``
(the fast contract names no mask).

How it departs from the contract:

- **Square.** Built with ``n_embd = d_out`` (minGPT's ``assert`` runs first), then ``ValueError`` when
  ``d_in != d_out``: minGPT cuts its heads from the input's own width. Every probe of the fast layer
  is square but one case of ``s8.fast.shapes``, which owns ``d_in != d_out``: this costs that check alone.
- **No fused kernel.** minGPT computes the weights by hand (``masked_fill``, ``softmax``): no
  ``F.scaled_dot_product_attention``, hence slower than the contract allows.
- **Biases.** ``c_attn`` always has a bias (``qkv_bias`` is ignored).
- **Divisibility** is an ``assert``.
"""
MODULE = "modern"
HELPERS = ["renamed"]  # _Renamed: the adapter that stores the source's names under the contract's
LOSES = ["s8.fast.shapes", "s8.fast.structure", "s8.fast.sdpa", "s8.fast.divisibility", "s8.fast.speed"]
ONLY = True  # square: d_in != d_out costs s8.fast.shapes alone
MENTIONS = "d_in=3 to d_out=12"

import math
from types import SimpleNamespace

from torch.nn import functional as F


# ---- karpathy/minGPT mingpt/model.py (MIT), as written ----

class CausalSelfAttention(nn.Module):
    """
    A vanilla multi-head masked self-attention layer with a projection at the end.
    It is possible to use torch.nn.MultiheadAttention here but I am including an
    explicit implementation here to show that there is nothing too scary here.
    """

    def __init__(self, config):
        super().__init__()
        assert config.n_embd % config.n_head == 0
        # key, query, value projections for all heads, but in a batch
        self.c_attn = nn.Linear(config.n_embd, 3 * config.n_embd)
        # output projection
        self.c_proj = nn.Linear(config.n_embd, config.n_embd)
        # regularization
        self.attn_dropout = nn.Dropout(config.attn_pdrop)
        self.resid_dropout = nn.Dropout(config.resid_pdrop)
        # causal mask to ensure that attention is only applied to the left in the input sequence
        self.register_buffer("bias", torch.tril(torch.ones(config.block_size, config.block_size))
                                     .view(1, 1, config.block_size, config.block_size))
        self.n_head = config.n_head
        self.n_embd = config.n_embd

    def forward(self, x):
        B, T, C = x.size() # batch size, sequence length, embedding dimensionality (n_embd)

        # calculate query, key, values for all heads in batch and move head forward to be the batch dim
        q, k ,v  = self.c_attn(x).split(self.n_embd, dim=2)
        k = k.view(B, T, self.n_head, C // self.n_head).transpose(1, 2) # (B, nh, T, hs)
        q = q.view(B, T, self.n_head, C // self.n_head).transpose(1, 2) # (B, nh, T, hs)
        v = v.view(B, T, self.n_head, C // self.n_head).transpose(1, 2) # (B, nh, T, hs)

        # causal self-attention; Self-attend: (B, nh, T, hs) x (B, nh, hs, T) -> (B, nh, T, T)
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
                                         attn_pdrop=dropout, resid_pdrop=0.0))
        if d_in != d_out:
            raise ValueError(f"minGPT's CausalSelfAttention maps n_embd to n_embd: d_in ({d_in}) must equal "
                             f"d_out ({d_out})")
