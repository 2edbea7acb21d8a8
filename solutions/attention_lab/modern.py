"""Stage 8: attention as current models run it.

Stage 4's ``MultiHeadAttention`` is the attention of GPT-2. Models since then change three
things, and this stage builds each of them:

- **Grouped-query attention (GQA).** Query heads come in groups, and every group shares one
  key/value head: ``num_kv_heads`` key/value heads serve ``num_heads`` query heads. With
  ``num_kv_heads == num_heads`` it is ordinary multi-head attention; with ``num_kv_heads == 1``
  it is multi-query attention (MQA). Fewer key/value heads mean smaller key/value projections
  and, above all, a smaller cache.
- **The KV cache.** A model that generates text feeds its own output back one token at a time.
  Without a cache it would recompute the keys and values of every earlier token at every step;
  with one, each token's key and value are computed once and kept. Here the cache is an
  argument and a return value, ``forward(x, cache) -> (out, cache)``, so the module itself keeps
  no state: passing ``cache=None`` starts a new sequence.
- **Fast attention.** ``torch.nn.functional.scaled_dot_product_attention`` runs the whole
  softmax(QK^T / sqrt(d)) V in one fused kernel (Flash Attention where the device has it) that
  never stores the full matrix of weights. With ``is_causal=True`` it also skips the blocks
  above the diagonal instead of computing and then hiding them. Together with one fused QKV
  projection, that makes ``FastMultiHeadAttention`` several times faster than stage 4's
  layer on long sequences. This stage grades speed as well as correctness.

``F.scaled_dot_product_attention`` is allowed in this stage.
"""
import torch
import torch.nn as nn
import torch.nn.functional as F


def repeat_kv(t, groups):
    """Repeats every key/value head ``groups`` times in a row.

    ``t``: (batch, num_kv_heads, seq, head_dim). Returns (batch, num_kv_heads * groups, seq,
    head_dim), where heads ``j * groups`` to ``(j + 1) * groups - 1`` are copies of head ``j``.
    Query heads are grouped in that order: query heads 0 and 1 share key/value head 0 when
    ``groups`` is 2.
    """
    ### BEGIN SOLUTION
    return t.repeat_interleave(groups, dim=1)
    ### END SOLUTION


class GroupedQueryAttention(nn.Module):
    """Causal attention with ``num_heads`` query heads sharing ``num_kv_heads`` key/value heads.

    Each head has ``head_dim = d_out // num_heads`` dimensions. The layers:

    - ``W_query``: ``nn.Linear(d_in, d_out, bias=qkv_bias)``;
    - ``W_key``, ``W_value``: ``nn.Linear(d_in, num_kv_heads * head_dim, bias=qkv_bias)``;
    - ``out_proj``: ``nn.Linear(d_out, d_out)`` (with bias);
    - ``mask``: a bool buffer of shape (context_length, context_length), True above the diagonal;
    - dropout on the attention weights.

    Raises ``ValueError`` when ``d_out`` is not divisible by ``num_heads``, or ``num_heads`` by
    ``num_kv_heads``.

    ``forward(x, cache=None)`` returns ``(out, cache)``:

    - ``x`` holds the next ``n`` tokens of each sequence, (batch, n, d_in);
    - ``cache`` is None for a new sequence, or the ``(keys, values)`` returned by the previous call,
      each of shape (batch, num_kv_heads, past, head_dim): the projected keys and values of the
      ``past`` tokens before ``x``, split into key/value heads and not repeated;
    - the tokens of ``x`` are at positions ``past`` to ``past + n - 1``: each sees every cached
      token and the tokens of ``x`` up to itself;
    - ``out`` is (batch, n, d_out), and the returned cache holds ``past + n`` tokens.

    Feeding a sequence in pieces, each piece with the cache from the one before, gives the same
    outputs as feeding it whole. Raises ``ValueError`` when ``past + n`` exceeds ``context_length``.

    Mind the order of the arguments: ``num_heads`` and ``num_kv_heads`` come before ``dropout``
    here, unlike stage 4's ``MultiHeadAttention(d_in, d_out, context_length, dropout, num_heads)``
    and ``FastMultiHeadAttention`` below. A positional call in stage 4's order puts the dropout
    where ``num_heads`` belongs; pass ``dropout=`` by name.
    """

    def __init__(self, d_in, d_out, context_length, num_heads, num_kv_heads, dropout=0.0, qkv_bias=False):
        super().__init__()
        ### BEGIN SOLUTION
        if d_out % num_heads != 0:
            raise ValueError(f"d_out ({d_out}) must be divisible by num_heads ({num_heads}): "
                             "every head gets d_out // num_heads dimensions")
        if num_heads % num_kv_heads != 0:
            raise ValueError(f"num_heads ({num_heads}) must be divisible by num_kv_heads ({num_kv_heads}): "
                             "every key/value head serves the same number of query heads")
        self.d_out = d_out
        self.num_heads = num_heads
        self.num_kv_heads = num_kv_heads
        self.head_dim = d_out // num_heads
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, num_kv_heads * self.head_dim, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, num_kv_heads * self.head_dim, bias=qkv_bias)
        self.out_proj = nn.Linear(d_out, d_out)
        self.dropout = nn.Dropout(dropout)
        self.register_buffer("mask", torch.ones(context_length, context_length, dtype=torch.bool).triu(1))
        ### END SOLUTION

    def forward(self, x, cache=None):
        # TODO: project x; split queries into num_heads heads, keys and values into num_kv_heads
        #       heads, each (b, heads, n, head_dim); put the cached keys/values in front of the new
        #       ones (torch.cat on the token dimension); the new cache is what you have now.
        #       Repeat keys and values to num_heads heads with repeat_kv for the scores.
        #       The queries sit at rows past..past+n-1 of the causal mask; they see past+n keys.
        ### BEGIN SOLUTION
        b, n, _ = x.shape
        past = 0 if cache is None else cache[0].shape[2]
        if past + n > self.mask.shape[0]:
            raise ValueError(f"{past} cached + {n} new tokens exceed context_length ({self.mask.shape[0]})")

        def heads(t, count):  # (b, n, count * head_dim) -> (b, count, n, head_dim)
            return t.view(b, n, count, self.head_dim).transpose(1, 2)

        queries = heads(self.W_query(x), self.num_heads)  # (b, num_heads, n, head_dim)
        keys = heads(self.W_key(x), self.num_kv_heads)  # (b, num_kv_heads, n, head_dim), as values
        values = heads(self.W_value(x), self.num_kv_heads)
        if cache is not None:  # the past's keys and values first: (b, num_kv_heads, past + n, head_dim)
            keys = torch.cat([cache[0], keys], dim=2)
            values = torch.cat([cache[1], values], dim=2)
        groups = self.num_heads // self.num_kv_heads
        scores = queries @ repeat_kv(keys, groups).transpose(2, 3) / self.head_dim ** 0.5  # (b, num_heads, n, past + n)
        scores = scores.masked_fill(self.mask[past:past + n, :past + n], -torch.inf)  # the new tokens' rows
        weights = self.dropout(torch.softmax(scores, dim=-1))
        # (b, num_heads, n, head_dim) -> (b, n, num_heads, head_dim) -> (b, n, d_out)
        context = (weights @ repeat_kv(values, groups)).transpose(1, 2).reshape(b, n, self.d_out)
        return self.out_proj(context), (keys, values)
        ### END SOLUTION


class FastMultiHeadAttention(nn.Module):
    """Stage 4's ``MultiHeadAttention``, as fast as PyTorch can run it.

    The same contract, in stage 4's order of arguments (``dropout`` before ``num_heads``, unlike
    ``GroupedQueryAttention`` above): ``FastMultiHeadAttention(d_in, d_out, context_length,
    dropout, num_heads, qkv_bias=False)``, ``forward(x)`` returns (batch, num_tokens, d_out),
    causal, dropout on the attention weights, ``ValueError`` when ``d_out`` is not divisible by
    ``num_heads``. The layers:

    - ``qkv``: one ``nn.Linear(d_in, 3 * d_out, bias=qkv_bias)``, whose weight is stage 4's three
      stacked, ``[W_query; W_key; W_value]``;
    - ``out_proj``: ``nn.Linear(d_out, d_out)`` (with bias).

    Attention itself is one call of ``F.scaled_dot_product_attention``. It needs no mask buffer:
    ``is_causal=True`` says which keys each query may see. Its ``dropout_p`` is applied whenever it
    is nonzero, so pass 0.0 in eval mode.

    Graded on speed too: on a long sequence on the CPU it may take at most 1.2 times as long as
    the kit's own version.
    """

    def __init__(self, d_in, d_out, context_length, dropout, num_heads, qkv_bias=False):
        super().__init__()
        ### BEGIN SOLUTION
        if d_out % num_heads != 0:
            raise ValueError(f"d_out ({d_out}) must be divisible by num_heads ({num_heads}): "
                             "every head gets d_out // num_heads dimensions")
        self.d_out = d_out
        self.num_heads = num_heads
        self.head_dim = d_out // num_heads
        self.context_length = context_length
        self.dropout_p = dropout
        self.qkv = nn.Linear(d_in, 3 * d_out, bias=qkv_bias)
        self.out_proj = nn.Linear(d_out, d_out)
        ### END SOLUTION

    def forward(self, x):
        # TODO: one projection to (b, n, 3 * d_out); view it as (b, n, 3, num_heads, head_dim) and
        #       permute to (3, b, num_heads, n, head_dim) to get queries, keys, values; call
        #       F.scaled_dot_product_attention with is_causal=True and the dropout of training mode
        #       only; merge the heads back to (b, n, d_out) and apply out_proj.
        ### BEGIN SOLUTION
        b, n, _ = x.shape
        # (b, n, 3 * d_out) -> (b, n, 3, num_heads, head_dim) -> 3 x (b, num_heads, n, head_dim)
        queries, keys, values = self.qkv(x).view(b, n, 3, self.num_heads, self.head_dim).permute(2, 0, 3, 1, 4)
        context = F.scaled_dot_product_attention(queries, keys, values, is_causal=True,  # (b, num_heads, n, head_dim)
                                                 dropout_p=self.dropout_p if self.training else 0.0)
        return self.out_proj(context.transpose(1, 2).reshape(b, n, self.d_out))
        ### END SOLUTION
