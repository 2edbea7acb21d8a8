"""Stage 9: attention in today's open models.

Stage 8 built the attention of models from 2023: grouped-query attention with a KV cache. The open
models a learner downloads today change four more things, and this stage builds each of them:

- **Rotary position embeddings (RoPE).** Instead of adding a position vector to the input (stage 7),
  every query and key is *rotated* by an angle that grows with its position, pair of dimensions by
  pair of dimensions, each pair at its own frequency. The dot product of two rotated vectors depends
  only on the difference of their angles, so a score sees how far apart two tokens are, not where
  they are. Llama, Mistral, Qwen, Gemma and DeepSeek all use it.
- **Sliding-window attention (SWA).** Each token sees only the ``window`` most recent tokens,
  itself included. The cache then never needs more than ``window - 1`` past tokens, however long
  the text grows (Mistral 7B, and every other layer of Gemma 2 and 3).
- **Multi-head latent attention (MLA).** Keys and values are both made from one small *latent*
  vector per token, and only the latents are cached: ``latent_dim`` numbers per token and layer
  instead of ``2 * d_out`` (DeepSeek-V2 and V3).
- **What a cache costs.** ``kv_cache_bytes`` puts numbers on all of the above.

``F.scaled_dot_product_attention`` is allowed in this stage (stage 8 taught it); the point here is
what goes into the keys, and which keys each query sees.
"""
import math

import torch
import torch.nn as nn

from .modern import GroupedQueryAttention, repeat_kv


def _attend(queries, keys, values, hidden, dropout):
    """softmax(Q K^T / sqrt(d)) V for queries (b, h, n, d) and keys, values (b, h_kv, m, d), with the
    key/value heads repeated for their groups of query heads; ``hidden``: bool (n, m), True where a
    query must not see a key. Returns (b, n, h * d)."""
    b, h, n, d = queries.shape
    groups = h // keys.shape[1]
    scores = queries @ repeat_kv(keys, groups).transpose(2, 3) / math.sqrt(d)
    weights = dropout(torch.softmax(scores.masked_fill(hidden, -torch.inf), dim=-1))
    return (weights @ repeat_kv(values, groups)).transpose(1, 2).reshape(b, n, h * d)


# ---------------------------------------------------------------- rotary position embeddings

def rope_tables(head_dim, context_length, base=10000.0):
    """The cosines and sines of RoPE's angles, each of shape (context_length, head_dim), float32.

    Dimension pair ``i`` (``i < head_dim // 2``) turns at the frequency ``base ** (-2 i / head_dim)``,
    so position ``p`` turns it by the angle ``p * base ** (-2 i / head_dim)``: the first pairs turn
    fast, the last ones slowly. In the "rotate half" layout (below), pair ``i`` is made of dimensions
    ``i`` and ``i + head_dim // 2``, so both halves of a row hold the same angles:
    ``cos[p] = cat(cos(angles), cos(angles))``, likewise ``sin``.

    Raises ``ValueError`` when ``head_dim`` is odd (the dimensions go in pairs).
    """
    ### BEGIN SOLUTION
    if head_dim % 2 != 0:
        raise ValueError(f"head_dim ({head_dim}) must be even: RoPE rotates pairs of dimensions")
    frequencies = base ** (-torch.arange(0, head_dim, 2, dtype=torch.float32) / head_dim)
    angles = torch.arange(context_length, dtype=torch.float32)[:, None] * frequencies[None, :]
    angles = torch.cat([angles, angles], dim=-1)  # (context_length, head_dim): each pair's angle, twice
    return angles.cos(), angles.sin()
    ### END SOLUTION


def apply_rope(x, cos, sin, offset=0):
    """Rotates the queries or keys ``x``, (batch, heads, seq, head_dim), by their positions.

    Token ``t`` of ``x`` sits at position ``offset + t``: with a KV cache of ``past`` tokens, the new
    tokens are rotated with ``offset=past``, so that a token gets the same rotation whether it is
    fed alone or within the whole sequence.

    The "rotate half" layout (Llama's code in the Hugging Face ecosystem, GPT-NeoX's, hence also called
    "NeoX style"; this lab's): dimension ``i`` of the first half and dimension ``i`` of the second half
    form a pair, and

        out = x * cos + rotate_half(x) * sin,   rotate_half(x) = cat(-x[..., d/2:], x[..., :d/2])

    with the rows ``offset .. offset + seq - 1`` of the tables. The other layout, *interleaved*
    (the RoPE paper's, GPT-J's, and Meta's original Llama code with complex numbers), pairs
    neighbouring dimensions ``2i`` and ``2i + 1`` instead. Both rotate by the same
    angles; what tells them apart is which dimensions turn together. A checkpoint made for one layout
    gives nonsense in the other unless its query/key weights are permuted.

    Returns a tensor of x's shape and dtype; x itself is left unchanged. Raises ``ValueError`` when
    ``offset + seq`` exceeds the tables' length.
    """
    ### BEGIN SOLUTION
    seq, half = x.shape[-2], x.shape[-1] // 2
    if offset + seq > cos.shape[0]:
        raise ValueError(f"positions {offset}..{offset + seq - 1} are past the tables' {cos.shape[0]} positions")
    cos = cos[offset:offset + seq].to(x.dtype)
    sin = sin[offset:offset + seq].to(x.dtype)
    rotated = torch.cat([-x[..., half:], x[..., :half]], dim=-1)  # (..., seq, head_dim), as x
    return x * cos + rotated * sin
    ### END SOLUTION


class RopeGroupedQueryAttention(GroupedQueryAttention):
    """Stage 8's ``GroupedQueryAttention`` with RoPE, as Llama 3, Mistral and Qwen run it.

    The same arguments, layers, cache and errors as ``GroupedQueryAttention`` (``num_heads`` and
    ``num_kv_heads`` before ``dropout``), with ``rope_base`` last, and two more buffers: ``cos`` and
    ``sin``, ``rope_tables(head_dim, context_length, rope_base)``. They move with ``.to(device)``, but
    are registered with ``persistent=False``: they follow from the configuration, so they are not
    saved in the ``state_dict`` (as Llama's code does).

    In ``forward(x, cache=None)`` the queries and keys are rotated, with ``apply_rope`` at
    ``offset=past``, right after they are split into heads and *before* the keys are cached: the
    cache holds rotated keys, and a token decoded at position ``p`` is rotated at ``p``. Values are
    not rotated. The rest is stage 8's.
    """

    def __init__(self, d_in, d_out, context_length, num_heads, num_kv_heads, dropout=0.0, qkv_bias=False,
                 rope_base=10000.0):
        super().__init__(d_in, d_out, context_length, num_heads, num_kv_heads, dropout, qkv_bias)
        ### BEGIN SOLUTION
        cos, sin = rope_tables(self.head_dim, context_length, rope_base)
        self.register_buffer("cos", cos, persistent=False)
        self.register_buffer("sin", sin, persistent=False)
        ### END SOLUTION

    def forward(self, x, cache=None):
        # TODO: as stage 8's forward, with apply_rope(..., offset=past) on the queries and on the new
        #       keys after splitting them into heads, before the cached keys are put in front.
        ### BEGIN SOLUTION
        b, n, _ = x.shape
        past = 0 if cache is None else cache[0].shape[2]
        if past + n > self.mask.shape[0]:
            raise ValueError(f"{past} cached + {n} new tokens exceed context_length ({self.mask.shape[0]})")

        def heads(t, count):
            return t.view(b, n, count, self.head_dim).transpose(1, 2)

        # (b, num_heads, n, head_dim); keys and values (b, num_kv_heads, n, head_dim); queries and keys turned
        # from position past, values not
        queries = apply_rope(heads(self.W_query(x), self.num_heads), self.cos, self.sin, past)
        keys = apply_rope(heads(self.W_key(x), self.num_kv_heads), self.cos, self.sin, past)
        values = heads(self.W_value(x), self.num_kv_heads)
        if cache is not None:
            keys = torch.cat([cache[0], keys], dim=2)
            values = torch.cat([cache[1], values], dim=2)
        context = _attend(queries, keys, values, self.mask[past:past + n, :past + n], self.dropout)
        return self.out_proj(context), (keys, values)
        ### END SOLUTION


# ---------------------------------------------------------------- sliding windows

class SlidingWindowAttention(nn.Module):
    """Causal multi-head attention in which every token sees at most the ``window`` most recent
    tokens, itself included: token ``t`` sees tokens ``t - window + 1 .. t``.

    The layers are stage 4's ``MultiHeadAttention``'s: ``W_query``, ``W_key``, ``W_value``
    (``nn.Linear(d_in, d_out, bias=qkv_bias)``), ``out_proj`` (``nn.Linear(d_out, d_out)``), dropout
    on the attention weights; with ``window >= seq`` it *is* that layer.

    ``forward(x, cache=None)`` returns ``(out, cache)``, like stage 8's layers: ``cache`` is None for a
    new sequence, or the ``(keys, values)`` returned by the previous call, each of shape
    (batch, num_heads, kept, head_dim), the projected keys and values of the last ``kept`` tokens.
    The returned cache keeps at most ``window - 1`` tokens (the most recent ones): the next token
    sees those and itself, and nothing older, so the cache never grows past the window, however long
    the sequence is decoded. With ``window=1`` it keeps none: keys and values of 0 tokens, or None in
    place of the cache (or of each of the two). Feeding a sequence in pieces gives the same outputs as
    feeding it whole.

    ``context_length`` bounds the tokens of one call (``ValueError`` beyond it); with a cache, decoding
    may go on past it. Raises ``ValueError`` when ``d_out`` is not divisible by ``num_heads`` or
    ``window`` is less than 1.
    """

    def __init__(self, d_in, d_out, context_length, num_heads, window, dropout=0.0, qkv_bias=False):
        super().__init__()
        ### BEGIN SOLUTION
        if d_out % num_heads != 0:
            raise ValueError(f"d_out ({d_out}) must be divisible by num_heads ({num_heads})")
        if window < 1:
            raise ValueError(f"window ({window}) must be at least 1: a token always sees itself")
        self.d_out, self.num_heads, self.head_dim = d_out, num_heads, d_out // num_heads
        self.context_length, self.window = context_length, window
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.out_proj = nn.Linear(d_out, d_out)
        self.dropout = nn.Dropout(dropout)
        ### END SOLUTION

    def forward(self, x, cache=None):
        # TODO: project and split into heads; put the cached keys/values (kept tokens) in front; the
        #       query at row t (position kept + t among the keys) sees keys kept + t - window + 1 ..
        #       kept + t: build that band as a bool mask on x's device; keep the last window - 1
        #       keys and values as the new cache.
        ### BEGIN SOLUTION
        b, n, _ = x.shape
        if n > self.context_length:
            raise ValueError(f"{n} tokens in one call exceed context_length ({self.context_length})")

        def heads(t):
            return t.view(b, n, self.num_heads, self.head_dim).transpose(1, 2)

        queries, keys, values = heads(self.W_query(x)), heads(self.W_key(x)), heads(self.W_value(x))
        kept = 0 if cache is None else cache[0].shape[2]
        if cache is not None:
            keys = torch.cat([cache[0], keys], dim=2)
            values = torch.cat([cache[1], values], dim=2)
        seen = torch.ones(n, kept + n, dtype=torch.bool, device=x.device)  # (n new queries, kept + n keys)
        seen = seen.tril(kept).triu(kept - self.window + 1)  # a band: itself and the window - 1 before it
        context = _attend(queries, keys, values, ~seen, self.dropout)
        keep = max(0, min(self.window - 1, kept + n))
        return self.out_proj(context), (keys[:, :, kept + n - keep:], values[:, :, kept + n - keep:])
        ### END SOLUTION


# ---------------------------------------------------------------- latent attention

class MultiHeadLatentAttention(nn.Module):
    """Causal multi-head attention whose keys and values come from one cached latent per token.

    The layers (no biases but ``out_proj``'s):

    - ``W_query``: ``nn.Linear(d_in, d_out)``, as in stage 4;
    - ``W_kv_down``: ``nn.Linear(d_in, latent_dim)``, shared by keys and values and by every head:
      the latent ``c = W_kv_down(x)``, the only thing cached;
    - ``W_key_up``, ``W_value_up``: ``nn.Linear(latent_dim, d_out)``, the per-head up-projections
      (head ``h`` owns rows ``h * head_dim .. (h + 1) * head_dim - 1``): keys ``W_key_up(c)``, values
      ``W_value_up(c)``;
    - ``out_proj``: ``nn.Linear(d_out, d_out)`` (with bias);
    - ``mask``: a bool buffer (context_length, context_length), True above the diagonal, as stage 8's;
    - dropout on the attention weights.

    So this is multi-head attention whose key weight is ``W_key_up.weight @ W_kv_down.weight`` (and
    likewise for values), a product of rank at most ``latent_dim``.

    ``forward(x, cache=None)`` returns ``(out, cache)``: the cache is one tensor, the latents of the
    tokens so far, (batch, past + n, latent_dim), or None for a new sequence. Raises ``ValueError``
    when ``d_out`` is not divisible by ``num_heads`` or the cache would grow past ``context_length``.

    DeepSeek-V2 and V3 add two things left out here. A layer norm on the latent. And RoPE: a rotated
    key cannot be folded into ``W_key_up`` (the rotation depends on the position), so they give each
    head a few more query dimensions and all heads one shared key of ``qk_rope_head_dim`` dimensions
    that carry RoPE ("decoupled RoPE"); that small key is cached beside the latent (512 + 64 numbers
    per token and layer in DeepSeek-V3).
    """

    def __init__(self, d_in, d_out, context_length, num_heads, latent_dim, dropout=0.0):
        super().__init__()
        ### BEGIN SOLUTION
        if d_out % num_heads != 0:
            raise ValueError(f"d_out ({d_out}) must be divisible by num_heads ({num_heads})")
        self.d_out, self.num_heads, self.head_dim = d_out, num_heads, d_out // num_heads
        self.W_query = nn.Linear(d_in, d_out, bias=False)
        self.W_kv_down = nn.Linear(d_in, latent_dim, bias=False)
        self.W_key_up = nn.Linear(latent_dim, d_out, bias=False)
        self.W_value_up = nn.Linear(latent_dim, d_out, bias=False)
        self.out_proj = nn.Linear(d_out, d_out)
        self.dropout = nn.Dropout(dropout)
        self.register_buffer("mask", torch.ones(context_length, context_length, dtype=torch.bool).triu(1))
        ### END SOLUTION

    def forward(self, x, cache=None):
        # TODO: latents of the new tokens, after the cached ones (torch.cat on the token dimension);
        #       queries from x; keys and values up-projected from all the latents; split into heads;
        #       causal attention with rows past..past+n-1 of the mask; return the latents as the cache.
        ### BEGIN SOLUTION
        b, n, _ = x.shape
        past = 0 if cache is None else cache.shape[1]
        if past + n > self.mask.shape[0]:
            raise ValueError(f"{past} cached + {n} new tokens exceed context_length ({self.mask.shape[0]})")
        latents = self.W_kv_down(x)  # (b, n, latent_dim): all the cache keeps of each token
        if cache is not None:
            latents = torch.cat([cache, latents], dim=1)

        def heads(t):
            return t.view(b, t.shape[1], self.num_heads, self.head_dim).transpose(1, 2)

        # queries (b, num_heads, n, head_dim); keys and values (b, num_heads, past + n, head_dim), from the latents
        queries, keys, values = heads(self.W_query(x)), heads(self.W_key_up(latents)), heads(self.W_value_up(latents))
        context = _attend(queries, keys, values, self.mask[past:past + n, :past + n], self.dropout)
        return self.out_proj(context), latents
        ### END SOLUTION


# ---------------------------------------------------------------- what a cache costs

BYTES_PER_NUMBER = {"fp32": 4, "bf16": 2, "fp16": 2, "fp8": 1}


def kv_cache_bytes(kind, batch, context_length, n_layers, emb_dim, n_heads, n_kv_heads=None, latent_dim=None,
                   window=None, dtype="bf16"):
    """The bytes of the KV cache of a whole model holding ``context_length`` tokens of ``batch`` sequences.

    With ``head_dim = emb_dim // n_heads`` and ``bytes`` per number of ``dtype`` (fp32 4, bf16 and fp16
    2, fp8 1), per token and layer the cache holds:

    - ``"mha"``: a key and a value per head, ``2 * n_heads * head_dim`` numbers;
    - ``"gqa"``: a key and a value per key/value head, ``2 * n_kv_heads * head_dim``;
    - ``"mla"``: the latent, ``latent_dim`` (for DeepSeek's decoupled RoPE, pass the latent plus the
      shared rotary key: 512 + 64);
    - ``"swa"``: as ``"gqa"`` (``n_kv_heads`` defaults to ``n_heads``), but for at most ``window``
      tokens: ``min(context_length, window)`` of them (the ``window - 1`` kept and the token being
      decoded).

    The total is that times ``bytes * n_layers * batch`` and the number of tokens. Raises
    ``ValueError`` for an unknown ``kind`` or ``dtype``, or when the kind's argument
    (``n_kv_heads`` for gqa, ``latent_dim`` for mla, ``window`` for swa) is missing.
    """
    ### BEGIN SOLUTION
    if dtype not in BYTES_PER_NUMBER:
        raise ValueError(f"unknown dtype {dtype!r}: one of {', '.join(BYTES_PER_NUMBER)}")
    head_dim = emb_dim // n_heads
    tokens = context_length
    if kind == "mha":
        numbers = 2 * n_heads * head_dim
    elif kind == "gqa":
        if n_kv_heads is None:
            raise ValueError("kind 'gqa' needs n_kv_heads")
        numbers = 2 * n_kv_heads * head_dim
    elif kind == "mla":
        if latent_dim is None:
            raise ValueError("kind 'mla' needs latent_dim")
        numbers = latent_dim
    elif kind == "swa":
        if window is None:
            raise ValueError("kind 'swa' needs window")
        numbers = 2 * (n_kv_heads or n_heads) * head_dim
        tokens = min(context_length, window)
    else:
        raise ValueError(f"unknown kind {kind!r}: one of 'mha', 'gqa', 'mla', 'swa'")
    return batch * tokens * n_layers * numbers * BYTES_PER_NUMBER[dtype]
    ### END SOLUTION
