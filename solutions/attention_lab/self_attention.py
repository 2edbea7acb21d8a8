"""Stage 2: self-attention with trainable weights (scaled dot-product attention).

Three trainable matrices project every input token into a *query*, a *key* and a
*value*. Scores are query-key dot products, scaled by 1/sqrt(d_k) (d_k = the key
width) before the softmax so that large widths do not push the softmax into a
near one-hot regime with vanishing gradients. Context vectors weight the values.
"""
import torch
import torch.nn as nn


def attend_one_query(x_query, inputs, W_query, W_key, W_value):
    """The step-by-step example: attention for one query token.

    x_query: (d_in,) the token we look from; inputs: (num_tokens, d_in);
    W_query, W_key, W_value: (d_in, d_out).
    Returns ``(attn_scores, attn_weights, context_vec)`` with shapes
    (num_tokens,), (num_tokens,), (d_out,).
    """
    # TODO: project the query token with W_query and all inputs with W_key and W_value;
    #       scores = query . each key; weights = softmax(scores / sqrt(d_k)) where d_k is the
    #       key width; context = weights times the values.
    ### BEGIN SOLUTION
    query = x_query @ W_query
    keys = inputs @ W_key
    values = inputs @ W_value
    attn_scores = query @ keys.T
    attn_weights = torch.softmax(attn_scores / keys.shape[-1] ** 0.5, dim=-1)
    return attn_scores, attn_weights, attn_weights @ values
    ### END SOLUTION


class SelfAttention_v1(nn.Module):
    """Self-attention with raw weight matrices.

    ``W_query``, ``W_key``, ``W_value``: ``nn.Parameter`` of shape (d_in, d_out), initialised
    with ``torch.rand`` and created in that order (the seeded example depends on the order).
    ``forward(x)``: x is (num_tokens, d_in); returns (num_tokens, d_out).
    """

    def __init__(self, d_in, d_out):
        super().__init__()
        ### BEGIN SOLUTION
        self.W_query = nn.Parameter(torch.rand(d_in, d_out))
        self.W_key = nn.Parameter(torch.rand(d_in, d_out))
        self.W_value = nn.Parameter(torch.rand(d_in, d_out))
        ### END SOLUTION

    def forward(self, x):
        # TODO: queries/keys/values are x @ W; scores are queries @ keys transposed;
        #       scale by 1/sqrt(d_k), softmax over the last dim, then weight the values.
        ### BEGIN SOLUTION
        queries = x @ self.W_query  # (..., num_tokens, d_in) @ (d_in, d_out) -> (..., num_tokens, d_out)
        keys = x @ self.W_key
        values = x @ self.W_value
        attn_scores = queries @ keys.transpose(-2, -1)  # (..., num_tokens, num_tokens)
        attn_weights = torch.softmax(attn_scores / keys.shape[-1] ** 0.5, dim=-1)  # each row sums to 1
        return attn_weights @ values  # (..., num_tokens, d_out)
        ### END SOLUTION


class SelfAttention_v2(nn.Module):
    """The same computation with ``nn.Linear`` layers (better initialisation, optional bias).

    ``W_query``, ``W_key``, ``W_value``: ``nn.Linear(d_in, d_out, bias=qkv_bias)``, in that order.
    An ``nn.Linear`` is called like a function, ``self.W_key(x)``; ``x @ self.W_key`` is an error.
    """

    def __init__(self, d_in, d_out, qkv_bias=False):
        super().__init__()
        ### BEGIN SOLUTION
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)
        ### END SOLUTION

    def forward(self, x):
        ### BEGIN SOLUTION
        queries = self.W_query(x)  # (..., num_tokens, d_out): nn.Linear stores its weight as (d_out, d_in)
        keys = self.W_key(x)
        values = self.W_value(x)
        attn_scores = queries @ keys.transpose(-2, -1)  # (..., num_tokens, num_tokens)
        attn_weights = torch.softmax(attn_scores / keys.shape[-1] ** 0.5, dim=-1)  # each row sums to 1
        return attn_weights @ values  # (..., num_tokens, d_out)
        ### END SOLUTION


def copy_v2_into_v1(sa_v2, sa_v1):
    """Copy the weights of a bias-free ``SelfAttention_v2`` into a ``SelfAttention_v1``.

    Afterwards both give the same output. ``nn.Linear`` stores its weight as (d_out, d_in)
    and computes x @ weight.T, while v1 computes x @ W with W of shape (d_in, d_out).
    Returns ``sa_v1``.
    """
    # TODO: under torch.no_grad(), copy each Linear's weight, transposed, into the matching parameter.
    ### BEGIN SOLUTION
    with torch.no_grad():
        sa_v1.W_query.copy_(sa_v2.W_query.weight.T)
        sa_v1.W_key.copy_(sa_v2.W_key.weight.T)
        sa_v1.W_value.copy_(sa_v2.W_value.weight.T)
    return sa_v1
    ### END SOLUTION
