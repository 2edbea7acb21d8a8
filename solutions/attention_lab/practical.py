"""Stage 6: self-attention as model code writes it.

The book's classes teach the idea; code that runs in real models adds three things. The
query, key and value projections are fused into one matrix product (``qkv``) and split
afterwards. Sentences in a batch have different lengths, so the short ones are padded, and
an *attention mask* (1 = a real token, 0 = padding) keeps every query from attending to
padding. Dropout acts on the attention weights, and a multi-head layer ends with an output
projection ``o_proj``.

Masked scores are filled with a large negative *finite* number (``-1e9`` or
``torch.finfo(dtype).min``), not ``-inf``: a row whose keys are all padding then gets
uniform weights instead of ``nan`` (``exp(-inf - (-inf))`` is ``nan``), and a ``nan`` in one
row of a batch poisons the gradients of all of it.
"""
import torch
import torch.nn as nn


def masked_softmax(scores, mask):
    """Softmax over the last dim of ``scores``, where ``mask == 0`` hides a key.

    ``mask`` broadcasts to ``scores`` (or is None). The fill is the dtype's most negative
    finite number: hidden keys get weight exactly 0, and fully hidden rows stay finite.
    """
    # TODO: if mask is not None, fill scores where mask == 0 with torch.finfo(scores.dtype).min
    #       (masked_fill broadcasts the mask); then softmax over the last dim.
    ### BEGIN SOLUTION
    if mask is not None:
        scores = scores.masked_fill(mask == 0, torch.finfo(scores.dtype).min)
    return torch.softmax(scores, dim=-1)
    ### END SOLUTION


class SelfAttentionFused(nn.Module):
    """Self-attention with the three projections fused into one layer.

    ``qkv``: ``nn.Linear(dim, 3 * dim)`` (with bias). Its output is split along the last dim
    into queries, keys and values, in that order (``qkv.weight`` is ``W_q``, ``W_k``, ``W_v``
    stacked). ``forward(x)``: x is (batch, seq, dim); returns (batch, seq, dim), using
    softmax(Q K^T / sqrt(dim)) V.
    """

    def __init__(self, dim):
        super().__init__()
        ### BEGIN SOLUTION
        self.dim = dim
        self.qkv = nn.Linear(dim, 3 * dim)
        ### END SOLUTION

    def forward(self, x):
        # TODO: one call of self.qkv, then split the result into Q, K, V (torch.split or .chunk
        #       along the last dim); scores Q @ K^T scaled by 1/sqrt(dim); softmax; @ V.
        ### BEGIN SOLUTION
        queries, keys, values = self.qkv(x).split(self.dim, dim=-1)  # (batch, seq, 3 * dim) -> 3 x (batch, seq, dim)
        scores = queries @ keys.transpose(-2, -1) / self.dim ** 0.5  # (batch, seq, seq)
        return torch.softmax(scores, dim=-1) @ values  # (batch, seq, dim)
        ### END SOLUTION


class MaskedSelfAttention(nn.Module):
    """Self-attention with a padding mask and attention dropout.

    ``q``, ``k``, ``v``: ``nn.Linear(dim, dim)`` (with bias); dropout with probability
    ``dropout`` on the attention weights (after the softmax). ``forward(x, attention_mask=None)``:
    x is (batch, seq, dim); ``attention_mask`` is (batch, seq) (0 marks a padded *key*,
    hidden from every query) or (batch, seq, seq) (entry [b, i, j] = 0 hides key j from
    query i). Returns (batch, seq, dim).
    """

    def __init__(self, dim, dropout=0.1):
        super().__init__()
        ### BEGIN SOLUTION
        self.dim = dim
        self.q = nn.Linear(dim, dim)
        self.k = nn.Linear(dim, dim)
        self.v = nn.Linear(dim, dim)
        self.attention_dropout = nn.Dropout(dropout)
        ### END SOLUTION

    def forward(self, x, attention_mask=None):
        # TODO: project x with q, k and v; scores scaled by 1/sqrt(dim); a (batch, seq) mask
        #       hides keys, so give it a query axis first (unsqueeze(1)); masked_softmax;
        #       dropout on the weights; @ values.
        ### BEGIN SOLUTION
        queries, keys, values = self.q(x), self.k(x), self.v(x)  # each (batch, seq, dim)
        scores = queries @ keys.transpose(-2, -1) / self.dim ** 0.5  # (batch, seq, seq)
        if attention_mask is not None and attention_mask.dim() == 2:
            attention_mask = attention_mask.unsqueeze(1)  # (batch, 1, seq): the same keys for every query
        weights = self.attention_dropout(masked_softmax(scores, attention_mask))
        return weights @ values  # (batch, seq, dim)
        ### END SOLUTION


class MultiHeadSelfAttention(nn.Module):
    """Multi-head self-attention with a padding mask, as in GPT-2 and BERT style code.

    ``q_proj``, ``k_proj``, ``v_proj``, ``o_proj``: ``nn.Linear(hidden_dim, hidden_dim)``
    (with bias); ``num_heads`` heads of width ``head_dim = hidden_dim // num_heads``
    (``ValueError`` when it does not divide); dropout on the attention weights.
    ``forward(x, attention_mask=None)``: x is (batch, seq, hidden_dim); ``attention_mask``
    is anything that broadcasts to (batch, num_heads, seq, seq), 0 = hidden: (batch, 1, 1, seq)
    for padding, (seq, seq) for one pattern shared by all, (batch, num_heads, seq, seq) for a
    mask per head. Returns (batch, seq, hidden_dim).
    """

    def __init__(self, hidden_dim, num_heads, dropout=0.1):
        super().__init__()
        ### BEGIN SOLUTION
        if hidden_dim % num_heads != 0:
            raise ValueError(f"hidden_dim ({hidden_dim}) must be divisible by num_heads ({num_heads})")
        self.num_heads = num_heads
        self.head_dim = hidden_dim // num_heads
        self.q_proj = nn.Linear(hidden_dim, hidden_dim)
        self.k_proj = nn.Linear(hidden_dim, hidden_dim)
        self.v_proj = nn.Linear(hidden_dim, hidden_dim)
        self.o_proj = nn.Linear(hidden_dim, hidden_dim)
        self.attention_dropout = nn.Dropout(dropout)
        ### END SOLUTION

    def forward(self, x, attention_mask=None):
        # TODO: project, then view as (batch, seq, num_heads, head_dim) and transpose to
        #       (batch, num_heads, seq, head_dim); scores scaled by 1/sqrt(head_dim) (not
        #       hidden_dim); masked_softmax with the mask as given (it broadcasts); dropout;
        #       @ values; transpose back, merge the heads (reshape) and apply o_proj.
        ### BEGIN SOLUTION
        batch, seq, hidden = x.shape

        def heads(t):  # (batch, seq, hidden) -> (batch, num_heads, seq, head_dim)
            return t.view(batch, seq, self.num_heads, self.head_dim).transpose(1, 2)

        queries, keys, values = heads(self.q_proj(x)), heads(self.k_proj(x)), heads(self.v_proj(x))
        scores = queries @ keys.transpose(-2, -1) / self.head_dim ** 0.5  # (batch, num_heads, seq, seq)
        weights = self.attention_dropout(masked_softmax(scores, attention_mask))
        context = (weights @ values).transpose(1, 2).reshape(batch, seq, hidden)  # the heads merged back
        return self.o_proj(context)
        ### END SOLUTION
