"""Stage 5: buffers.

A buffer is a tensor that belongs to a module without being trained. Registering the
causal mask as a buffer makes ``.to(device)`` move it together with the weights and
puts it in the ``state_dict``; a plain tensor attribute does neither. Both classes
below compute causal attention like ``CausalAttention`` (same signature and names);
only the second registers ``mask``.
"""
import torch
import torch.nn as nn


class CausalAttentionWithoutBuffers(nn.Module):
    """Causal attention whose ``mask`` is a plain tensor attribute: it stays on the device
    it was created on when the module moves, and it is not saved in the ``state_dict``."""

    def __init__(self, d_in, d_out, context_length, dropout, qkv_bias=False):
        super().__init__()
        ### BEGIN SOLUTION
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.dropout = nn.Dropout(dropout)
        self.mask = torch.triu(torch.ones(context_length, context_length), diagonal=1)
        ### END SOLUTION

    def forward(self, x):
        # TODO: the same computation as CausalAttention.forward in causal.py.
        ### BEGIN SOLUTION
        num_tokens = x.shape[1]  # x: (batch, num_tokens, d_in)
        queries = self.W_query(x)  # (batch, num_tokens, d_out), as keys and values
        keys = self.W_key(x)
        values = self.W_value(x)
        attn_scores = queries @ keys.transpose(1, 2)  # (batch, num_tokens, num_tokens)
        attn_scores = attn_scores.masked_fill(self.mask.bool()[:num_tokens, :num_tokens], -torch.inf)
        attn_weights = torch.softmax(attn_scores / keys.shape[-1] ** 0.5, dim=-1)  # each row sums to 1
        return self.dropout(attn_weights) @ values  # (batch, num_tokens, d_out)
        ### END SOLUTION


class CausalAttentionWithBuffer(nn.Module):
    """Causal attention whose ``mask`` is registered with ``register_buffer``."""

    def __init__(self, d_in, d_out, context_length, dropout, qkv_bias=False):
        super().__init__()
        # TODO: the same layers as CausalAttentionWithoutBuffers, but the mask goes through
        #       self.register_buffer("mask", ...).
        ### BEGIN SOLUTION
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.dropout = nn.Dropout(dropout)
        self.register_buffer("mask", torch.triu(torch.ones(context_length, context_length), diagonal=1))
        ### END SOLUTION

    def forward(self, x):
        # TODO: nothing changes in the computation, only where the mask lives.
        ### BEGIN SOLUTION
        return CausalAttentionWithoutBuffers.forward(self, x)
        ### END SOLUTION

