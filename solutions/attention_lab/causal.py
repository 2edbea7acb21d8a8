"""Stage 3: causal attention, with dropout.

A language model predicts the next token, so when it builds the context vector of
token t it must not look at tokens after t. A *causal mask* hides everything above
the diagonal of the attention matrix. Dropout then randomly zeroes some attention
weights during training (and only during training) to reduce over-fitting.
"""
import torch
import torch.nn as nn


def causal_weights_by_multiplication(attn_scores, d_k):
    """Causal weights the long way: softmax first, then hide the future and renormalise.

    attn_scores: (num_tokens, num_tokens) raw scores.  Returns weights of the same shape:
    zero above the diagonal, every row summing to 1.
    """
    # TODO: softmax(attn_scores / sqrt(d_k)) over the last dim; multiply by a lower-triangular
    #       matrix of ones (torch.tril); divide every row by its new sum (keepdim=True).
    ### BEGIN SOLUTION
    weights = torch.softmax(attn_scores / d_k ** 0.5, dim=-1)
    n = attn_scores.shape[-1]
    lower = torch.tril(torch.ones(n, n, dtype=weights.dtype, device=weights.device))
    masked = weights * lower
    return masked / masked.sum(dim=-1, keepdim=True)
    ### END SOLUTION


def causal_weights_by_fill(attn_scores, d_k):
    """Causal weights the efficient way: fill future scores with -inf, then one softmax.

    Must agree with ``causal_weights_by_multiplication``: exp(-inf) is 0, so the softmax
    itself gives the hidden positions zero weight and normalises what is left.
    """
    # TODO: build an upper-triangular mask (torch.triu with diagonal=1), fill the scores there
    #       with -torch.inf (masked_fill with a bool mask), then softmax(scores / sqrt(d_k)).
    ### BEGIN SOLUTION
    n = attn_scores.shape[-1]
    future = torch.triu(torch.ones(n, n, dtype=torch.bool, device=attn_scores.device), diagonal=1)
    masked = attn_scores.masked_fill(future, -torch.inf)
    return torch.softmax(masked / d_k ** 0.5, dim=-1)
    ### END SOLUTION


class CausalAttention(nn.Module):
    """Causal self-attention for batches.

    ``W_query``, ``W_key``, ``W_value``: ``nn.Linear(d_in, d_out, bias=qkv_bias)``;
    ``mask``: a registered buffer of shape (context_length, context_length), nonzero above
    the diagonal; dropout with probability ``dropout`` applied to the attention weights.
    ``forward(x)``: x is (batch, num_tokens, d_in) with num_tokens <= context_length;
    returns (batch, num_tokens, d_out).
    """

    def __init__(self, d_in, d_out, context_length, dropout, qkv_bias=False):
        super().__init__()
        # TODO: three nn.Linear projections (query, key, value, in that order), an nn.Dropout,
        #       and the mask registered with self.register_buffer so it moves with .to(device)
        #       and is saved in the state_dict.
        ### BEGIN SOLUTION
        self.d_out = d_out
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.dropout = nn.Dropout(dropout)
        self.register_buffer("mask", torch.triu(torch.ones(context_length, context_length), diagonal=1))
        ### END SOLUTION

    def forward(self, x):
        # TODO: scores are queries @ keys with the last two dims of keys swapped (batch first!);
        #       hide the future with the first num_tokens x num_tokens corner of self.mask;
        #       softmax(scores / sqrt(d_k)); dropout on the weights; weights @ values.
        #       Do not modify x in place.
        ### BEGIN SOLUTION
        num_tokens = x.shape[1]  # x: (batch, num_tokens, d_in)
        queries = self.W_query(x)  # (batch, num_tokens, d_out), as keys and values
        keys = self.W_key(x)
        values = self.W_value(x)
        attn_scores = queries @ keys.transpose(1, 2)  # (batch, num_tokens, num_tokens)
        attn_scores = attn_scores.masked_fill(self.mask.bool()[:num_tokens, :num_tokens], -torch.inf)
        attn_weights = torch.softmax(attn_scores / keys.shape[-1] ** 0.5, dim=-1)  # each row sums to 1
        attn_weights = self.dropout(attn_weights)
        return attn_weights @ values  # (batch, num_tokens, d_out)
        ### END SOLUTION
