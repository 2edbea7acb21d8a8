"""Stage 4: multi-head attention.

Several attention "heads" look at the sequence independently, each with its own
query/key/value projections, and their context vectors are joined. First as a stack
of ``CausalAttention`` modules, then as one module that splits a single projection
into heads (one big matrix product instead of a Python loop over heads).
"""
import torch
import torch.nn as nn

from .causal import CausalAttention


class MultiHeadAttentionWrapper(nn.Module):
    """``num_heads`` independent ``CausalAttention`` heads, outputs concatenated.

    ``heads``: an ``nn.ModuleList`` of ``CausalAttention(d_in, d_out, context_length, dropout, qkv_bias)``.
    ``forward(x)`` returns (batch, num_tokens, num_heads * d_out).
    """

    def __init__(self, d_in, d_out, context_length, dropout, num_heads, qkv_bias=False):
        super().__init__()
        ### BEGIN SOLUTION
        self.heads = nn.ModuleList(
            [CausalAttention(d_in, d_out, context_length, dropout, qkv_bias) for _ in range(num_heads)]
        )
        ### END SOLUTION

    def forward(self, x):
        # TODO: run every head on x and concatenate the results along the last dimension.
        ### BEGIN SOLUTION
        return torch.cat([head(x) for head in self.heads], dim=-1)
        ### END SOLUTION


class MultiHeadAttention(nn.Module):
    """Multi-head causal attention with the heads split out of one projection.

    ``W_query``, ``W_key``, ``W_value``: ``nn.Linear(d_in, d_out, bias=qkv_bias)``;
    ``out_proj``: ``nn.Linear(d_out, d_out)`` (with bias); ``mask``: a buffer as in
    ``CausalAttention``; each head has width ``head_dim = d_out // num_heads``.
    Raises ``ValueError`` when ``d_out`` is not divisible by ``num_heads``.
    ``forward(x)`` returns (batch, num_tokens, d_out).

    Mind the order of the arguments: ``dropout`` comes before ``num_heads`` here (the book's
    order), while stage 8's ``GroupedQueryAttention(d_in, d_out, context_length, num_heads,
    num_kv_heads, dropout=0.0)`` puts the heads first. Pass ``num_heads=`` by name when in doubt.
    """

    def __init__(self, d_in, d_out, context_length, dropout, num_heads, qkv_bias=False):
        super().__init__()
        ### BEGIN SOLUTION
        if d_out % num_heads != 0:
            raise ValueError(
                f"d_out ({d_out}) must be divisible by num_heads ({num_heads}): "
                "every head gets d_out // num_heads dimensions"
            )
        self.d_out = d_out
        self.num_heads = num_heads
        self.head_dim = d_out // num_heads
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.out_proj = nn.Linear(d_out, d_out)
        self.dropout = nn.Dropout(dropout)
        self.register_buffer("mask", torch.triu(torch.ones(context_length, context_length), diagonal=1))
        ### END SOLUTION

    def forward(self, x):
        # TODO: project x to queries/keys/values (b, num_tokens, d_out); split the last dim into
        #       (num_heads, head_dim) with .view, then swap to (b, num_heads, num_tokens, head_dim);
        #       causal attention per head with scale 1/sqrt(head_dim); dropout on the weights;
        #       swap back, merge the heads into d_out (contiguous().view or reshape), apply out_proj.
        ### BEGIN SOLUTION
        b, num_tokens, _ = x.shape

        def split_heads(t):  # (b, num_tokens, d_out) -> (b, num_heads, num_tokens, head_dim)
            return t.view(b, num_tokens, self.num_heads, self.head_dim).transpose(1, 2)

        queries = split_heads(self.W_query(x))
        keys = split_heads(self.W_key(x))
        values = split_heads(self.W_value(x))
        attn_scores = queries @ keys.transpose(2, 3)  # (b, num_heads, num_tokens, num_tokens)
        attn_scores = attn_scores.masked_fill(self.mask.bool()[:num_tokens, :num_tokens], -torch.inf)
        attn_weights = torch.softmax(attn_scores / self.head_dim ** 0.5, dim=-1)  # each row sums to 1
        attn_weights = self.dropout(attn_weights)
        # (b, num_heads, num_tokens, head_dim) -> (b, num_tokens, num_heads, head_dim) -> (b, num_tokens, d_out)
        context = (attn_weights @ values).transpose(1, 2).contiguous().view(b, num_tokens, self.d_out)
        return self.out_proj(context)
        ### END SOLUTION


class MultiHeadAttentionPyTorch(nn.Module):
    """The same layer built on PyTorch's ``nn.MultiheadAttention``.

    ``mha``: ``nn.MultiheadAttention(d_out, num_heads, dropout=dropout, bias=qkv_bias,
    batch_first=True)``; ``mask``: a bool buffer, True above the diagonal (PyTorch's
    convention: True = not allowed to attend). ``nn.MultiheadAttention`` maps embed_dim to
    embed_dim, so this variant needs ``d_in == d_out`` and raises ``ValueError`` otherwise.
    """

    def __init__(self, d_in, d_out, context_length, dropout, num_heads, qkv_bias=False):
        super().__init__()
        ### BEGIN SOLUTION
        if d_in != d_out:
            raise ValueError(f"nn.MultiheadAttention needs d_in == d_out, got {d_in} and {d_out}")
        self.mha = nn.MultiheadAttention(d_out, num_heads, dropout=dropout, bias=qkv_bias, batch_first=True)
        self.register_buffer(
            "mask", torch.triu(torch.ones(context_length, context_length, dtype=torch.bool), diagonal=1)
        )
        ### END SOLUTION

    def forward(self, x):
        # TODO: self.mha(x, x, x, attn_mask=..., need_weights=False) returns (output, weights);
        #       pass the num_tokens x num_tokens corner of the mask.
        ### BEGIN SOLUTION
        num_tokens = x.shape[1]
        out, _ = self.mha(x, x, x, attn_mask=self.mask[:num_tokens, :num_tokens], need_weights=False)
        return out
        ### END SOLUTION


def count_parameters(module):
    """Number of trainable scalars in ``module`` (buffers such as the mask do not count).

    For GPT-2 size, ``MultiHeadAttention(768, 768, 1024, 0.0, 12)`` has 2,360,064.
    """
    ### BEGIN SOLUTION
    return sum(p.numel() for p in module.parameters() if p.requires_grad)
    ### END SOLUTION
