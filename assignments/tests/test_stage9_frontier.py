"""Stage 9 self-checks: attention in today's open models (attention_lab/frontier.py).

Expected values are computed here from the formulas in your module's docstrings (RoPE in the
rotate-half layout), from your own layers (a sliding window as long as the input is plain causal
attention; latent attention is attention with composed weights; decoding with a cache must equal
the full forward), and, for ``kv_cache_bytes``, from published figures of real models.
"""
import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F

from lab_checks import expect, expect_close, expect_raises, expect_shape, run, student, tensor

pytestmark = pytest.mark.stage9

DIM, HEADS, KV_HEADS, CONTEXT, WINDOW, LATENT = 16, 4, 2, 24, 4, 6


def x(*shape, seed=0):
    return torch.randn(*shape, generator=torch.Generator().manual_seed(seed))


def rotate_half_rope(t, offset):
    """RoPE as the docstring of apply_rope states it, in float64."""
    seq, d = t.shape[-2], t.shape[-1]
    frequencies = 10000.0 ** (-torch.arange(0, d, 2, dtype=torch.float64) / d)
    angles = torch.arange(offset, offset + seq, dtype=torch.float64)[:, None] * frequencies
    angles = torch.cat([angles, angles], dim=-1)
    t = t.double()
    return t * angles.cos() + torch.cat([-t[..., d // 2:], t[..., :d // 2]], dim=-1) * angles.sin()


def pair(result, what):
    expect(isinstance(result, (tuple, list)) and len(result) == 2,
           f"{what} should return a pair, got {type(result).__name__}")
    return result


def causal_attention(layer, tokens, key, value):
    """Plain causal multi-head attention of ``tokens`` with ``layer``'s W_query and out_proj, and keys and
    values made by ``key`` and ``value``: what the layer must give when nothing else changes it."""
    b, n, _ = tokens.shape

    def heads(t):
        return t.view(b, n, HEADS, DIM // HEADS).transpose(1, 2)

    q, k, v = heads(layer.W_query(tokens)), heads(key(tokens)), heads(value(tokens))
    scores = (q @ k.transpose(-2, -1)) / q.shape[-1] ** 0.5
    hidden = torch.ones(n, n, dtype=torch.bool).triu(1)
    mixed = torch.softmax(scores.masked_fill(hidden, float("-inf")), dim=-1) @ v
    return layer.out_proj(mixed.transpose(1, 2).reshape(b, n, DIM))


# --- RoPE --------------------------------------------------------------------------------------

def test_rope_tables_have_one_row_per_position_and_both_halves_alike():
    frontier = student("frontier")
    cos, sin = pair(run(frontier.rope_tables, 8, 6), "rope_tables(8, 6)")
    expect_shape(cos, (6, 8), "the cos of rope_tables(8, 6)")
    expect_shape(sin, (6, 8), "the sin of rope_tables(8, 6)")
    expect_close(tensor(cos, "cos")[:, :4], tensor(cos, "cos")[:, 4:], "the two halves of cos (rotate-half layout: "
                 "pair i is dimensions i and i + head_dim // 2, so both halves hold the same angles)")
    expect_close(cos[0], torch.ones(8), "cos at position 0 (nothing is rotated there)")
    expect_close(cos ** 2 + sin ** 2, torch.ones(6, 8), "cos^2 + sin^2 (the same angles in both tables)")


def test_apply_rope_rotates_pairs_of_the_rotate_half_layout():
    frontier = student("frontier")
    cos, sin = pair(run(frontier.rope_tables, 8, 16), "rope_tables(8, 16)")
    q = x(2, 3, 5, 8, seed=1)
    for offset in (0, 3):
        out = tensor(run(frontier.apply_rope, q, cos, sin, offset), f"apply_rope(q, cos, sin, offset={offset})")
        expect_close(out, rotate_half_rope(q, offset).float(), f"apply_rope(q, cos, sin, offset={offset})",
                     setup="q = torch.randn(2, 3, 5, 8); cos, sin = rope_tables(8, 16)")


def test_after_rope_a_score_depends_only_on_the_distance_between_positions():
    frontier = student("frontier")
    cos, sin = pair(run(frontier.rope_tables, 8, 16), "rope_tables(8, 16)")
    q, k = x(1, 1, 1, 8, seed=2), x(1, 1, 1, 8, seed=3)

    def score(m, n):
        return float((run(frontier.apply_rope, q, cos, sin, m) * run(frontier.apply_rope, k, cos, sin, n)).sum())

    expect(abs(score(5, 2) - score(12, 9)) < 1e-4, "the score of a query at 5 and a key at 2 differs from that of a "
           "query at 12 and a key at 9: after RoPE only the distance (3) should matter")


def test_the_rotary_layer_decodes_with_its_cache_as_it_runs_whole():
    frontier = student("frontier")
    torch.manual_seed(0)
    layer = run(frontier.RopeGroupedQueryAttention, DIM, DIM, CONTEXT, HEADS, KV_HEADS).eval()
    tokens = x(2, 7, DIM, seed=4)
    full, _ = pair(run(layer, tokens), "RopeGroupedQueryAttention.forward")
    cache, outs = None, []
    for t in range(7):
        out, cache = pair(run(layer, tokens[:, t:t + 1], cache), "RopeGroupedQueryAttention.forward")
        outs.append(tensor(out, "the output with a cache"))
    expect_close(torch.cat(outs, dim=1), full, "RopeGroupedQueryAttention fed one token at a time with its cache "
                 "(token t rotated at position t, rotated keys cached), against the full forward")


# --- sliding windows ---------------------------------------------------------------------------

def test_a_window_as_long_as_the_input_is_causal_attention():
    frontier = student("frontier")
    torch.manual_seed(0)
    layer = run(frontier.SlidingWindowAttention, DIM, DIM, CONTEXT, HEADS, 8).eval()
    tokens = x(2, 6, DIM, seed=5)
    out, _ = pair(run(layer, tokens), "SlidingWindowAttention.forward")
    expect_close(out, causal_attention(layer, tokens, layer.W_key, layer.W_value), "SlidingWindowAttention(16, "
                 "16, 24, 4, window=8) on 6 tokens (the window holds them all: plain causal attention)")


def test_the_window_hides_later_and_older_tokens():
    frontier = student("frontier")
    layer = run(frontier.SlidingWindowAttention, DIM, DIM, CONTEXT, HEADS, 3).eval()
    tokens = x(1, 8, DIM, seed=6).requires_grad_()
    out, _ = pair(run(layer, tokens), "SlidingWindowAttention.forward")
    expect(isinstance(out, torch.Tensor) and out.requires_grad and out.shape[:2] == (1, 8),
           "SlidingWindowAttention's output should be a (1, 8, 16) tensor that carries gradients to its input")
    grad, = torch.autograd.grad(out[0, 6].sum(), tokens)  # position 6 should see tokens 4, 5 and 6 only
    seen = [s for s in range(8) if grad[0, s].abs().max() > 0]
    expect(seen == [4, 5, 6], f"with window=3 the output at position 6 depends on tokens {seen}; it should depend "
           "on tokens 4, 5 and 6 (itself and the two before it) and on nothing later or older")


def test_the_rolling_cache_never_holds_more_than_window_minus_one_tokens():
    frontier = student("frontier")
    torch.manual_seed(0)
    layer = run(frontier.SlidingWindowAttention, DIM, DIM, CONTEXT, HEADS, WINDOW).eval()
    tokens = x(2, 3 * WINDOW + 1, DIM, seed=7)
    full, _ = pair(run(layer, tokens), "SlidingWindowAttention.forward")
    cache, outs = None, []
    for t in range(tokens.shape[1]):
        out, cache = pair(run(layer, tokens[:, t:t + 1], cache), "SlidingWindowAttention.forward")
        kept = tensor(pair(cache, "the cache")[0], "the cache's keys").shape[2]
        expect(kept == min(t + 1, WINDOW - 1), f"after {t + 1} tokens your cache holds {kept} tokens with window "
               f"{WINDOW}; it should hold {min(t + 1, WINDOW - 1)}")
        outs.append(tensor(out, "the output with a cache"))
    expect_close(torch.cat(outs, dim=1), full, f"SlidingWindowAttention(window={WINDOW}) fed one token at a time "
                 "with its rolling cache, against the full forward")


# --- latent attention --------------------------------------------------------------------------

def test_latent_attention_is_attention_with_composed_key_and_value_weights():
    frontier = student("frontier")
    torch.manual_seed(0)
    layer = run(frontier.MultiHeadLatentAttention, DIM, DIM, CONTEXT, HEADS, LATENT).eval()
    tokens = x(2, 6, DIM, seed=8)
    out, latents = pair(run(layer, tokens), "MultiHeadLatentAttention.forward")
    expect_shape(latents, (2, 6, LATENT), "the cache of MultiHeadLatentAttention on 6 tokens (one latent per token)")
    key_weight = layer.W_key_up.weight @ layer.W_kv_down.weight
    value_weight = layer.W_value_up.weight @ layer.W_kv_down.weight
    want = causal_attention(layer, tokens, lambda t: F.linear(t, key_weight), lambda t: F.linear(t, value_weight))
    expect_close(out, want, "MultiHeadLatentAttention against multi-head attention with key weight "
                 "W_key_up.weight @ W_kv_down.weight (likewise values)")
    expect(isinstance(layer.W_kv_down, nn.Linear), "W_kv_down should be an nn.Linear(d_in, latent_dim)")


# --- what a cache costs ------------------------------------------------------------------------

def test_kv_cache_bytes_reproduces_published_figures():
    frontier = student("frontier")
    # Llama 3 8B (Meta's config.json: 32 layers, hidden size 4096, 32 heads, 8 key/value heads), bf16:
    # 2 * 32 * 8 * 128 * 2 = 131072 bytes, the "128 KiB per token" quoted for it.
    got = run(frontier.kv_cache_bytes, "gqa", 1, 1, 32, 4096, 32, n_kv_heads=8)
    expect(got == 131072, f"kv_cache_bytes('gqa', 1, 1, 32, 4096, 32, n_kv_heads=8) (Llama 3 8B, one token, bf16) "
           f"is {got}; expected 131072 bytes (128 KiB)")
    # Llama 3.3 70B (80 layers, hidden size 8192, 64 heads, 8 key/value heads) at fp16: "every 1K tokens of
    # context costs about 320 MB" (runlocalai.co's glossary, "KV Cache"): 1024 tokens are 320 MiB exactly.
    got = run(frontier.kv_cache_bytes, "gqa", 1, 1024, 80, 8192, 64, n_kv_heads=8, dtype="fp16")
    expect(got == 320 * 2 ** 20, f"kv_cache_bytes for Llama 3.3 70B, 1024 tokens at fp16, is {got}; expected "
           "335544320 bytes (320 MiB)")
    # DeepSeek-V3 (its config.json: 61 layers, kv_lora_rank 512, qk_rope_head_dim 64). DeepSeek-V2's paper
    # (arXiv:2405.04434, table 1) gives MLA's cache per token as (d_c + d_h^R) * l numbers: (512 + 64) * 61,
    # 70272 bytes in bf16.
    got = run(frontier.kv_cache_bytes, "mla", 1, 1, 61, 7168, 128, latent_dim=512 + 64)
    expect(got == 70272, f"kv_cache_bytes('mla', 1, 1, 61, 7168, 128, latent_dim=576) (DeepSeek-V3, one token) is "
           f"{got}; expected 70272 bytes")
    # Mistral 7B v0.1 (32 layers, hidden 4096, 32 heads, 8 key/value heads, a sliding window of 4096 tokens): at
    # 32768 tokens of context the cache holds only the window, 8 times less than all the tokens.
    whole = run(frontier.kv_cache_bytes, "gqa", 1, 32768, 32, 4096, 32, n_kv_heads=8)
    windowed = run(frontier.kv_cache_bytes, "swa", 1, 32768, 32, 4096, 32, n_kv_heads=8, window=4096)
    expect(whole == 8 * windowed, f"a sliding window of 4096 tokens over 32768 should cache 8 times less than "
           f"the whole context; got {windowed} against {whole} bytes")


def test_kv_cache_bytes_refuses_what_it_does_not_know():
    frontier = student("frontier")
    expect_raises(ValueError, frontier.kv_cache_bytes, "dense", 1, 8, 1, 64, 4, what="kv_cache_bytes('dense', ...)",
                  because=" (the kinds are mha, gqa, mla and swa)")
    expect_raises(ValueError, frontier.kv_cache_bytes, "gqa", 1, 8, 1, 64, 4,
                  what="kv_cache_bytes('gqa', ...) without n_kv_heads", because=" (gqa needs n_kv_heads)")
