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
        # YOUR CODE HERE
        raise NotImplementedError()

    def forward(self, x):
        # TODO: the same computation as CausalAttention.forward in causal.py.
        # YOUR CODE HERE
        raise NotImplementedError()


class CausalAttentionWithBuffer(nn.Module):
    """Causal attention whose ``mask`` is registered with ``register_buffer``."""

    def __init__(self, d_in, d_out, context_length, dropout, qkv_bias=False):
        super().__init__()
        # TODO: the same layers as CausalAttentionWithoutBuffers, but the mask goes through
        #       self.register_buffer("mask", ...).
        # YOUR CODE HERE
        raise NotImplementedError()

    def forward(self, x):
        # TODO: nothing changes in the computation, only where the mask lives.
        # YOUR CODE HERE
        raise NotImplementedError()

