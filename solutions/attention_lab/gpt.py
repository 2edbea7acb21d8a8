"""Stage 10: a GPT built from your own attention.

Nine stages built attention one layer at a time. This one puts your layer to work: it wraps stage
4's ``MultiHeadAttention`` in the blocks of a GPT (the book's next chapter), loads weights the kit
trained, and writes text with them. Every layer of the model is yours, so when the model copies a
sentence it has seen, it is your attention that found where to copy from.

- **The block.** Pre-norm, as GPT-2 has it: ``x + attention(norm(x))``, then ``x + feed_forward(norm(x))``,
  with dropout on each branch before it is added back (the shortcut itself is never dropped).
  ``LayerNorm`` has a learned ``scale`` and ``shift``; ``GELU`` is the tanh approximation GPT-2 used;
  the feed-forward network widens to 4 x ``emb_dim`` and back.
- **The model.** Token embeddings plus position embeddings, the blocks, a final norm, and an output
  head without bias that gives one logit per word of the vocabulary, at every position.
- **Greedy generation.** Feed the text, take the most likely next token, append it, repeat: the
  book's ``generate_text_simple``. Each new token recomputes every token before it.
- **Generation with a KV cache.** The same model built on stage 8's ``GroupedQueryAttention`` (with
  as many key/value heads as query heads, it *is* stage 4's layer, with the same parameters) feeds
  only the new token, and keeps the keys and values of the earlier ones. Same tokens, less work.
- **Training.** A few steps of next-token prediction: cross-entropy of the logits at every position
  against the token that follows.

The parameter names are fixed by the docstrings below, so that a ``state_dict`` saved by the kit
loads into your model with ``load_state_dict(..., strict=True)``. The kit's tiny model
(``tests/tiny_gpt.py``: 2 layers, 64 wide, 4 heads, one character per token) learned to continue a
sequence that repeats: the kind of task that makes an *induction head* form, a head that looks for
the earlier place where the current token stood and copies what came after it.
"""
import math

import torch
import torch.nn as nn

from .modern import GroupedQueryAttention
from .multihead import MultiHeadAttention

# GPT-2 small, the book's GPT_CONFIG_124M: 163,009,536 parameters, 124,412,160 once the output head
# shares the token embeddings' matrix (as OpenAI's checkpoint does).
GPT_CONFIG_124M = {
    "vocab_size": 50257,
    "context_length": 1024,
    "emb_dim": 768,
    "n_heads": 12,
    "n_layers": 12,
    "drop_rate": 0.1,
    "qkv_bias": False,
}


class LayerNorm(nn.Module):
    """Normalises each vector over its last dimension, then scales and shifts it.

    ``scale``: ``nn.Parameter(torch.ones(emb_dim))``; ``shift``: ``nn.Parameter(torch.zeros(emb_dim))``;
    ``eps = 1e-5``. ``forward(x)`` returns ``scale * (x - mean) / sqrt(var + eps) + shift``, with the
    mean and the *biased* variance (divided by n, not n - 1: ``unbiased=False``) over the last
    dimension. Same shape and dtype as ``x``.
    """

    def __init__(self, emb_dim):
        super().__init__()
        ### BEGIN SOLUTION
        self.eps = 1e-5
        self.scale = nn.Parameter(torch.ones(emb_dim))
        self.shift = nn.Parameter(torch.zeros(emb_dim))
        ### END SOLUTION

    def forward(self, x):
        # TODO: mean and variance over the last dimension (keepdim=True, unbiased=False), normalise,
        #       then scale and shift.
        ### BEGIN SOLUTION
        mean = x.mean(dim=-1, keepdim=True)  # (..., 1): one mean per vector
        var = x.var(dim=-1, keepdim=True, unbiased=False)  # (..., 1)
        return self.scale * (x - mean) / torch.sqrt(var + self.eps) + self.shift  # (..., emb_dim), as x
        ### END SOLUTION


class GELU(nn.Module):
    """GPT-2's activation, the tanh approximation of GELU, element by element:
    ``0.5 * x * (1 + tanh(sqrt(2 / pi) * (x + 0.044715 * x ** 3)))``. Same shape and dtype as ``x``.
    """

    def forward(self, x):
        # TODO: the formula above (torch.tanh, math.sqrt or torch.sqrt of 2 / pi).
        ### BEGIN SOLUTION
        return 0.5 * x * (1 + torch.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * x ** 3)))
        ### END SOLUTION


class FeedForward(nn.Module):
    """The position-wise network of a block: widen to 4 x ``emb_dim``, GELU, back to ``emb_dim``.

    ``layers``: ``nn.Sequential(nn.Linear(emb_dim, 4 * emb_dim), GELU(), nn.Linear(4 * emb_dim, emb_dim))``,
    both linear layers with a bias (so their parameters are ``layers.0.*`` and ``layers.2.*``).
    ``cfg`` is a configuration like ``GPT_CONFIG_124M``; only ``cfg["emb_dim"]`` is used.
    """

    def __init__(self, cfg):
        super().__init__()
        ### BEGIN SOLUTION
        d = cfg["emb_dim"]
        self.layers = nn.Sequential(nn.Linear(d, 4 * d), GELU(), nn.Linear(4 * d, d))
        ### END SOLUTION

    def forward(self, x):
        ### BEGIN SOLUTION
        return self.layers(x)
        ### END SOLUTION


class TransformerBlock(nn.Module):
    """One GPT block, pre-norm, built on your stage 4 ``MultiHeadAttention``.

    - ``att``: ``MultiHeadAttention(d_in=emb_dim, d_out=emb_dim, context_length=context_length,
      dropout=drop_rate, num_heads=n_heads, qkv_bias=qkv_bias)``, all read from ``cfg``;
    - ``ff``: ``FeedForward(cfg)``;
    - ``norm1``, ``norm2``: ``LayerNorm(emb_dim)``, before the attention and before the feed-forward;
    - ``drop_shortcut``: ``nn.Dropout(drop_rate)``, on each branch before it is added back.

    ``forward(x)`` for x of shape (batch, num_tokens, emb_dim) returns the same shape::

        x = x + drop_shortcut(att(norm1(x)))
        x = x + drop_shortcut(ff(norm2(x)))
    """

    def __init__(self, cfg):
        super().__init__()
        ### BEGIN SOLUTION
        self.att = MultiHeadAttention(d_in=cfg["emb_dim"], d_out=cfg["emb_dim"], context_length=cfg["context_length"],
                                      dropout=cfg["drop_rate"], num_heads=cfg["n_heads"], qkv_bias=cfg["qkv_bias"])
        self.ff = FeedForward(cfg)
        self.norm1 = LayerNorm(cfg["emb_dim"])
        self.norm2 = LayerNorm(cfg["emb_dim"])
        self.drop_shortcut = nn.Dropout(cfg["drop_rate"])
        ### END SOLUTION

    def forward(self, x):
        # TODO: the two residual branches above; each adds its (dropped-out) result to its own input.
        ### BEGIN SOLUTION
        x = x + self.drop_shortcut(self.att(self.norm1(x)))  # (batch, num_tokens, emb_dim) throughout
        return x + self.drop_shortcut(self.ff(self.norm2(x)))
        ### END SOLUTION


class GPTModel(nn.Module):
    """The whole model: token ids in, logits out.

    - ``tok_emb``: ``nn.Embedding(vocab_size, emb_dim)``; ``pos_emb``: ``nn.Embedding(context_length, emb_dim)``;
    - ``drop_emb``: ``nn.Dropout(drop_rate)``, on the sum of the two embeddings;
    - ``trf_blocks``: ``nn.Sequential`` of ``n_layers`` ``TransformerBlock(cfg)``;
    - ``final_norm``: ``LayerNorm(emb_dim)``;
    - ``out_head``: ``nn.Linear(emb_dim, vocab_size, bias=False)``.

    ``forward(in_idx)`` for token ids of shape (batch, num_tokens), at positions 0 to num_tokens - 1,
    returns the logits, (batch, num_tokens, vocab_size): at position t, the scores of every token
    of the vocabulary as the one that comes after token t.
    """

    def __init__(self, cfg):
        super().__init__()
        ### BEGIN SOLUTION
        self.tok_emb = nn.Embedding(cfg["vocab_size"], cfg["emb_dim"])
        self.pos_emb = nn.Embedding(cfg["context_length"], cfg["emb_dim"])
        self.drop_emb = nn.Dropout(cfg["drop_rate"])
        self.trf_blocks = nn.Sequential(*[TransformerBlock(cfg) for _ in range(cfg["n_layers"])])
        self.final_norm = LayerNorm(cfg["emb_dim"])
        self.out_head = nn.Linear(cfg["emb_dim"], cfg["vocab_size"], bias=False)
        ### END SOLUTION

    def forward(self, in_idx):
        # TODO: embed the tokens and their positions (torch.arange on in_idx's device), add, dropout,
        #       the blocks, the final norm, the output head.
        ### BEGIN SOLUTION
        positions = torch.arange(in_idx.shape[1], device=in_idx.device)  # (num_tokens,): 0, 1, ...
        # (batch, num_tokens, emb_dim) + (num_tokens, emb_dim): each position's vector added to its token's
        x = self.drop_emb(self.tok_emb(in_idx) + self.pos_emb(positions))
        return self.out_head(self.final_norm(self.trf_blocks(x)))  # (batch, num_tokens, vocab_size)
        ### END SOLUTION


def generate_greedy(model, idx, max_new_tokens, context_size):
    """Append ``max_new_tokens`` tokens to ``idx`` (batch, n), each the most likely next token.

    Each step feeds the last ``context_size`` tokens at most (positions start at 0 for the first of
    them), takes the logits of the last position, and appends their argmax. Runs without autograd
    (``torch.no_grad()``) and leaves the model's mode as it is. Returns the token ids,
    (batch, n + max_new_tokens), as integers: ``idx``'s dtype, or the int64 that argmax gives;
    ``idx`` itself is not changed.
    """
    ### BEGIN SOLUTION
    for _ in range(max_new_tokens):
        with torch.no_grad():
            logits = model(idx[:, -context_size:])  # (batch, min(n, context_size), vocab_size)
        next_token = logits[:, -1, :].argmax(dim=-1, keepdim=True)  # (batch, 1): the last position's choice
        idx = torch.cat([idx, next_token.to(idx.dtype)], dim=1)  # (batch, n + 1)
    return idx
    ### END SOLUTION


class CachedTransformerBlock(nn.Module):
    """``TransformerBlock`` for decoding with a KV cache, built on your stage 8 ``GroupedQueryAttention``.

    The same layers and names as ``TransformerBlock`` (``att``, ``ff``, ``norm1``, ``norm2``,
    ``drop_shortcut``), except that ``att`` is ``GroupedQueryAttention(emb_dim, emb_dim,
    context_length, num_heads=n_heads, num_kv_heads=n_heads, dropout=drop_rate, qkv_bias=qkv_bias)``:
    with one key/value head per query head it computes what stage 4's layer computes, with
    parameters of the same names and shapes, so one ``state_dict`` serves both blocks.

    ``forward(x, cache=None)`` returns ``(x, cache)``: the block's output, and the cache that ``att``
    returned (pass it back with the next tokens).
    """

    def __init__(self, cfg):
        super().__init__()
        ### BEGIN SOLUTION
        self.att = GroupedQueryAttention(cfg["emb_dim"], cfg["emb_dim"], cfg["context_length"],
                                         num_heads=cfg["n_heads"], num_kv_heads=cfg["n_heads"],
                                         dropout=cfg["drop_rate"], qkv_bias=cfg["qkv_bias"])
        self.ff = FeedForward(cfg)
        self.norm1 = LayerNorm(cfg["emb_dim"])
        self.norm2 = LayerNorm(cfg["emb_dim"])
        self.drop_shortcut = nn.Dropout(cfg["drop_rate"])
        ### END SOLUTION

    def forward(self, x, cache=None):
        ### BEGIN SOLUTION
        attended, cache = self.att(self.norm1(x), cache)  # (batch, n, emb_dim), and the cache of past + n tokens
        x = x + self.drop_shortcut(attended)
        return x + self.drop_shortcut(self.ff(self.norm2(x))), cache
        ### END SOLUTION


class CachedGPTModel(nn.Module):
    """``GPTModel`` for decoding with a KV cache: the same layers and parameter names (``tok_emb``,
    ``pos_emb``, ``drop_emb``, ``trf_blocks``, ``final_norm``, ``out_head``), with ``trf_blocks`` an
    ``nn.ModuleList`` of ``n_layers`` ``CachedTransformerBlock(cfg)``. A ``state_dict`` of a
    ``GPTModel`` loads into it with ``strict=True``, and the other way round.

    ``forward(in_idx, caches=None)`` returns ``(logits, caches)``:

    - ``in_idx``: the next ``n`` tokens of each sequence, (batch, n);
    - ``caches``: None for a new sequence, or the list returned by the previous call, one cache per
      block (each block's ``(keys, values)``, holding ``past`` tokens);
    - the tokens of ``in_idx`` sit at positions ``past`` to ``past + n - 1`` (their position
      embeddings too), and see every cached token;
    - ``logits``: (batch, n, vocab_size); the returned list holds each block's cache of ``past + n`` tokens.
    """

    def __init__(self, cfg):
        super().__init__()
        ### BEGIN SOLUTION
        self.tok_emb = nn.Embedding(cfg["vocab_size"], cfg["emb_dim"])
        self.pos_emb = nn.Embedding(cfg["context_length"], cfg["emb_dim"])
        self.drop_emb = nn.Dropout(cfg["drop_rate"])
        self.trf_blocks = nn.ModuleList([CachedTransformerBlock(cfg) for _ in range(cfg["n_layers"])])
        self.final_norm = LayerNorm(cfg["emb_dim"])
        self.out_head = nn.Linear(cfg["emb_dim"], cfg["vocab_size"], bias=False)
        ### END SOLUTION

    def forward(self, in_idx, caches=None):
        # TODO: past = how many tokens the caches hold (0 without); positions past .. past + n - 1;
        #       run each block with its own cache and collect the caches they return.
        ### BEGIN SOLUTION
        # each block's cache is (keys, values), each (batch, num_heads, past, head_dim)
        past = 0 if caches is None else caches[0][0].shape[2]
        positions = torch.arange(past, past + in_idx.shape[1], device=in_idx.device)  # (n,): past .. past + n - 1
        x = self.drop_emb(self.tok_emb(in_idx) + self.pos_emb(positions))  # (batch, n, emb_dim)
        caches = caches or [None] * len(self.trf_blocks)
        new_caches = []
        for block, cache in zip(self.trf_blocks, caches):
            x, cache = block(x, cache)
            new_caches.append(cache)
        return self.out_head(self.final_norm(x)), new_caches  # (batch, n, vocab_size), n_layers caches
        ### END SOLUTION


def generate_cached(model, idx, max_new_tokens, context_size):
    """``generate_greedy`` for a ``CachedGPTModel``: the same tokens, with a KV cache.

    The first step feeds the last ``context_size`` tokens of ``idx``; every later step feeds only
    the token just generated, with the caches of the step before, so that each block computes the
    keys and values of one new token instead of all of them again. When the caches hold
    ``context_size`` tokens there is no room for another: the next step starts afresh from the last
    ``context_size`` tokens, as ``generate_greedy`` does at every step. Runs without autograd and
    leaves the model's mode as it is. Returns (batch, n + max_new_tokens) token ids, integers as
    ``generate_greedy``'s are.
    """
    ### BEGIN SOLUTION
    caches = None
    for _ in range(max_new_tokens):
        with torch.no_grad():
            if caches is None:
                logits, caches = model(idx[:, -context_size:])
            else:
                logits, caches = model(idx[:, -1:], caches)
        next_token = logits[:, -1, :].argmax(dim=-1, keepdim=True)  # (batch, 1)
        idx = torch.cat([idx, next_token.to(idx.dtype)], dim=1)
        if caches[0][0].shape[2] >= context_size:  # block 0's keys: (batch, num_heads, tokens held, head_dim)
            caches = None
    return idx
    ### END SOLUTION


def train_steps(model, batches, optimizer, steps):
    """Train ``model`` for ``steps`` steps of next-token prediction; returns each step's loss.

    ``batches``: a list of ``(inputs, targets)`` pairs of token ids, each (batch, n), where target t
    is the token that follows input t. Step i uses ``batches[i % len(batches)]``: with the model in
    train mode, the cross-entropy of the logits at every position against the targets, averaged over
    all of them (``F.cross_entropy(logits.flatten(0, 1), targets.flatten())``); then zero the
    gradients, backpropagate, and ``optimizer.step()``.

    Returns the ``steps`` losses as Python floats, each measured before its step's update, and
    leaves the model in eval mode, ready to be evaluated or to generate.
    """
    ### BEGIN SOLUTION
    losses = []
    model.train()
    for step in range(steps):
        inputs, targets = batches[step % len(batches)]
        logits = model(inputs)  # (batch, n, vocab_size)
        # every position is one prediction: (batch * n, vocab_size) logits against (batch * n,) targets
        loss = nn.functional.cross_entropy(logits.flatten(0, 1), targets.flatten())
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    model.eval()
    return losses
    ### END SOLUTION
