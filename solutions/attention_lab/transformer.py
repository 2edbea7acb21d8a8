"""Stage 7: the Transformer's encoder and decoder layers, as in "Attention Is All You Need".

Attention maps a query and a set of key-value pairs to an output: a weighted sum of the
values, weighted by softmax(Q K^T / sqrt(d_k)). Multi-head attention runs h such heads of
width d_k = d_model / h side by side. In *self*-attention queries, keys and values all come
from the same sequence; in the decoder's *cross*-attention the queries come from the
decoder and the keys and values from the encoder's output (``memory``), so the two
sequences may have different lengths.

Two masks, both with 1 (True) = may attend and 0 = hidden: the *padding mask* hides padded
key positions; the *subsequent mask* hides the future from the decoder. Words carry their
position through a sinusoidal *positional encoding* added to the embeddings: a fixed table
(a buffer, not a parameter). Every sublayer is wrapped as LayerNorm(x + Dropout(Sublayer(x)))
("post-norm", the paper's order). Every encoder layer is self-attention then a position-wise
feed-forward network; a decoder layer puts cross-attention between the two.
"""
import math

import torch
import torch.nn as nn


def scaled_dot_product_attention(query, key, value, mask=None, dropout=None):
    """Attention(Q, K, V) = softmax(Q K^T / sqrt(d_k)) V, over the last two dims.

    query (..., n_q, d_k), key (..., n_k, d_k), value (..., n_k, d_v); ``mask`` broadcasts to
    (..., n_q, n_k) with 0 = hidden (filled with -1e9, so a fully hidden row stays finite);
    ``dropout`` is an ``nn.Dropout`` applied to the weights, or None. Returns
    ``(output, weights)``: (..., n_q, d_v) and the weights after dropout, (..., n_q, n_k).
    """
    # TODO: scores = query @ key^T / sqrt(d_k) (d_k = query.size(-1)); masked_fill(mask == 0, -1e9)
    #       *before* the softmax; softmax over the keys; dropout on the weights if given.
    ### BEGIN SOLUTION
    d_k = query.size(-1)
    scores = query @ key.transpose(-2, -1) / math.sqrt(d_k)  # (..., queries, keys)
    if mask is not None:
        scores = scores.masked_fill(mask == 0, -1e9)
    weights = scores.softmax(dim=-1)
    if dropout is not None:
        weights = dropout(weights)
    return weights @ value, weights  # (..., queries, d_v), and the weights
    ### END SOLUTION


def padding_mask(tokens, pad_id):
    """(batch, seq) token ids -> bool mask (batch, 1, seq): True where the token is not ``pad_id``.

    The middle axis of size 1 lets the same key mask serve every query position.
    """
    ### BEGIN SOLUTION
    return (tokens != pad_id).unsqueeze(-2)
    ### END SOLUTION


def subsequent_mask(size):
    """Bool mask (1, size, size): True on and below the diagonal, so position i sees positions <= i.

    Combine with a padding mask by ``&``: ``padding_mask(tgt, pad) & subsequent_mask(tgt.size(1))``.
    """
    ### BEGIN SOLUTION
    return torch.tril(torch.ones(1, size, size, dtype=torch.bool))
    ### END SOLUTION


class MultiHeadedAttention(nn.Module):
    """Multi-head attention with separate query, key and value inputs.

    ``linears``: an ``nn.ModuleList`` of four ``nn.Linear(d_model, d_model)`` (with bias), the
    projections of the query, key and value inputs and the output projection, in that order;
    ``d_k = d_model // h`` (``ValueError`` when ``h`` does not divide ``d_model``); dropout on
    the attention weights. ``forward(query, key, value, mask=None)``: query (batch, n_q,
    d_model), key and value (batch, n_k, d_model); ``mask`` (batch or 1, 1 or n_q, n_k), the
    same for every head. Returns (batch, n_q, d_model).
    """

    def __init__(self, h, d_model, dropout=0.1):
        super().__init__()
        ### BEGIN SOLUTION
        if d_model % h != 0:
            raise ValueError(f"d_model ({d_model}) must be divisible by the number of heads h ({h})")
        self.h = h
        self.d_k = d_model // h
        self.linears = nn.ModuleList([nn.Linear(d_model, d_model) for _ in range(4)])
        self.dropout = nn.Dropout(dropout)
        ### END SOLUTION

    def forward(self, query, key, value, mask=None):
        # TODO: project each input with its own linear layer, then split into heads:
        #       view(batch, -1, h, d_k).transpose(1, 2); the mask gets a head axis (unsqueeze(1));
        #       scaled_dot_product_attention with self.dropout; merge the heads back to
        #       (batch, n_q, d_model) and apply the last linear layer.
        ### BEGIN SOLUTION
        batch = query.size(0)
        if mask is not None:
            mask = mask.unsqueeze(1)  # the same mask for every head
        query, key, value = [  # each (batch, tokens, d_model) -> (batch, h, tokens, d_k)
            lin(x).view(batch, -1, self.h, self.d_k).transpose(1, 2)
            for lin, x in zip(self.linears, (query, key, value))
        ]
        x, _ = scaled_dot_product_attention(query, key, value, mask=mask, dropout=self.dropout)
        x = x.transpose(1, 2).reshape(batch, -1, self.h * self.d_k)  # the heads side by side: (batch, tokens, d_model)
        return self.linears[-1](x)
        ### END SOLUTION


class PositionwiseFeedForward(nn.Module):
    """FFN(x) = w_2(dropout(relu(w_1(x)))), applied to every position alike.

    ``w_1``: ``nn.Linear(d_model, d_ff)``; ``w_2``: ``nn.Linear(d_ff, d_model)``; the paper
    uses d_ff = 4 * d_model (2048 for 512).
    """

    def __init__(self, d_model, d_ff, dropout=0.1):
        super().__init__()
        ### BEGIN SOLUTION
        self.w_1 = nn.Linear(d_model, d_ff)
        self.w_2 = nn.Linear(d_ff, d_model)
        self.dropout = nn.Dropout(dropout)
        ### END SOLUTION

    def forward(self, x):
        ### BEGIN SOLUTION
        return self.w_2(self.dropout(self.w_1(x).relu()))
        ### END SOLUTION


class PositionalEncoding(nn.Module):
    """Adds the sinusoidal position table to its input, then applies dropout.

    PE[pos, 2i] = sin(pos / 10000^(2i / d_model)) and PE[pos, 2i+1] = cos(pos / 10000^(2i / d_model)),
    for positions 0 .. max_len - 1 and an even ``d_model``. ``pe``: a buffer of shape
    (1, max_len, d_model), or (max_len, d_model) if you prefer (not a parameter: the table is
    fixed, yet must move with the module and be saved with it). ``forward(x)``: x is (batch, seq, d_model); returns
    dropout(x + pe[:, :seq]).
    """

    def __init__(self, d_model, dropout, max_len=5000):
        super().__init__()
        # TODO: positions (max_len, 1) times the frequencies 1 / 10000^(2i / d_model) for
        #       2i = 0, 2, 4, ...; sin into the even columns, cos into the odd ones;
        #       self.register_buffer("pe", table.unsqueeze(0)).
        ### BEGIN SOLUTION
        self.dropout = nn.Dropout(dropout)
        position = torch.arange(max_len, dtype=torch.float32).unsqueeze(1)
        frequency = torch.exp(torch.arange(0, d_model, 2, dtype=torch.float32) * (-math.log(10000.0) / d_model))
        pe = torch.zeros(max_len, d_model)
        pe[:, 0::2] = torch.sin(position * frequency)
        pe[:, 1::2] = torch.cos(position * frequency)
        self.register_buffer("pe", pe.unsqueeze(0))  # (1, max_len, d_model): added to every batch
        ### END SOLUTION

    def forward(self, x):
        ### BEGIN SOLUTION
        return self.dropout(x + self.pe[:, : x.size(1)])
        ### END SOLUTION


class EncoderLayer(nn.Module):
    """Self-attention, then the feed-forward network, each as norm(x + dropout(sublayer(x))).

    ``self_attn``: ``MultiHeadedAttention(h, d_model, dropout)``; ``feed_forward``:
    ``PositionwiseFeedForward(d_model, d_ff, dropout)``; ``norm1``, ``norm2``:
    ``nn.LayerNorm(d_model)``; a dropout on each sublayer's output. ``forward(x, mask=None)``:
    x is (batch, seq, d_model), ``mask`` as for ``MultiHeadedAttention`` (a padding mask).
    Computes what ``nn.TransformerEncoderLayer(d_model, h, d_ff, batch_first=True)`` computes.
    """

    def __init__(self, d_model, h, d_ff, dropout=0.1):
        super().__init__()
        ### BEGIN SOLUTION
        self.self_attn = MultiHeadedAttention(h, d_model, dropout)
        self.feed_forward = PositionwiseFeedForward(d_model, d_ff, dropout)
        self.norm1 = nn.LayerNorm(d_model)
        self.norm2 = nn.LayerNorm(d_model)
        self.dropout = nn.Dropout(dropout)
        ### END SOLUTION

    def forward(self, x, mask=None):
        # TODO: x = norm1(x + dropout(self_attn(x, x, x, mask))); then the same with feed_forward
        #       and norm2. Post-norm: the LayerNorm comes after the residual sum.
        ### BEGIN SOLUTION
        x = self.norm1(x + self.dropout(self.self_attn(x, x, x, mask)))
        return self.norm2(x + self.dropout(self.feed_forward(x)))
        ### END SOLUTION


class DecoderLayer(nn.Module):
    """Masked self-attention, cross-attention over the encoder's output, then the feed-forward network.

    ``self_attn``, ``src_attn``: ``MultiHeadedAttention(h, d_model, dropout)``; ``feed_forward``:
    ``PositionwiseFeedForward(d_model, d_ff, dropout)``; ``norm1``, ``norm2``, ``norm3``:
    ``nn.LayerNorm(d_model)``. ``forward(x, memory, src_mask=None, tgt_mask=None)``: x is the
    decoder input (batch, n_tgt, d_model), ``memory`` the encoder output (batch, n_src, d_model);
    ``tgt_mask`` hides the future (and padding) in self-attention, ``src_mask`` hides padded
    source positions in cross-attention, whose keys and values are ``memory``. Computes what
    ``nn.TransformerDecoderLayer(d_model, h, d_ff, batch_first=True)`` computes.
    """

    def __init__(self, d_model, h, d_ff, dropout=0.1):
        super().__init__()
        ### BEGIN SOLUTION
        self.self_attn = MultiHeadedAttention(h, d_model, dropout)
        self.src_attn = MultiHeadedAttention(h, d_model, dropout)
        self.feed_forward = PositionwiseFeedForward(d_model, d_ff, dropout)
        self.norm1 = nn.LayerNorm(d_model)
        self.norm2 = nn.LayerNorm(d_model)
        self.norm3 = nn.LayerNorm(d_model)
        self.dropout = nn.Dropout(dropout)
        ### END SOLUTION

    def forward(self, x, memory, src_mask=None, tgt_mask=None):
        # TODO: three post-norm sublayers: self_attn(x, x, x, tgt_mask); then
        #       src_attn(x, memory, memory, src_mask) (queries from the decoder, keys and values
        #       from the encoder); then feed_forward.
        ### BEGIN SOLUTION
        x = self.norm1(x + self.dropout(self.self_attn(x, x, x, tgt_mask)))
        x = self.norm2(x + self.dropout(self.src_attn(x, memory, memory, src_mask)))
        return self.norm3(x + self.dropout(self.feed_forward(x)))
        ### END SOLUTION
