"""Stage 9 judges: rotary positions, sliding windows, latent attention, and what a cache costs.

Where the expected values come from: RoPE's formula, written out below (in both layouts, so that
feedback can tell a student which one they wrote); the reference's golden data for the rotary and
sliding-window layers' known weights; stage 4's golden outputs (a window as long as the input is
stage 4's layer); PyTorch's ``nn.MultiheadAttention`` holding the *composed* key and value weights
for latent attention (``oracles.grouped_query``); and the formulas of ``kv_cache_bytes``'s docstring.
"""
from functools import lru_cache
from types import SimpleNamespace

import torch

from ...probes.stage9 import (BAND_WINDOW, CONTEXT, COST_CASES, DIM, FULL, HEADS, KV_HEADS, LATENT, LAYER_SHAPES,
                              PIECES, RELATIVE, SWA_SHAPES, TABLE_CASES, WINDOW, Q, X, kit_tables, mla_weights)
from ...public import oracles
from ...public.feedback import is_error_record
from ..families import d_out_wide, layer, shape_contract
from ..judging import (LEAK_LIMIT, check_context_edges, check_device, check_gradients, check_leak, check_value_error,
                       close, expect, expect_close, expect_parameters, forward_failure, get)
from ..pictures import leak_map
from ..registry import CPU, MOVES, NUMERIC, VISIBLE, Checks, Fail
from .stage8 import STAGE4

CHECKS = Checks(9)
CHECKS.look("SlidingWindowAttention", "SlidingWindowAttention(3, 4, 6, 2, window=3)")  # the band shows


# ---------------------------------------------------------------- RoPE

def rotated(x, offset, layout="half"):
    """RoPE of ``x`` (..., seq, d) at positions offset.., in the rotate-half layout or the interleaved one."""
    seq, d = x.shape[-2], x.shape[-1]
    cos, sin = (t[offset:offset + seq].double() for t in kit_tables(d, offset + seq))
    x = x.double()
    if layout == "half":
        return x * cos + torch.cat([-x[..., d // 2:], x[..., :d // 2]], dim=-1) * sin
    # interleaved: pair (2i, 2i+1) turns by angle i
    cos, sin = cos[:, :d // 2].repeat_interleave(2, -1), sin[:, :d // 2].repeat_interleave(2, -1)
    swapped = torch.stack([-x[..., 1::2], x[..., 0::2]], dim=-1).flatten(-2)
    return x * cos + swapped * sin


def expect_rotation(out, x, offset, what):
    """``out`` is RoPE of ``x`` at ``offset``, or the check fails naming the likely mistake."""
    want = rotated(x, offset)
    expect(out.shape == want.shape, f"{what} has shape {tuple(out.shape)}, expected {tuple(want.shape)} "
           "(the shape of x)")
    if close(out, want):
        return
    if close(out, rotated(x, offset, "interleaved")):
        raise Fail(f"{what}: rotate_half layout expected; your pairs look interleaved (dimensions 2i and 2i+1 "
                   "turning together). In this lab dimension i pairs with dimension i + head_dim // 2")
    if close(out, x.double()):
        raise Fail(f"{what} is x unchanged: nothing was rotated")
    cos = kit_tables(x.shape[-1], offset + x.shape[-2])[0][offset:].double()
    if close(out, 2 * x.double() * cos - want):  # x cos - rotate_half(x) sin: the angles negated
        raise Fail(f"{what} turns every pair the wrong way: rotate_half(x) is cat(-x2, x1), the second half "
                   "negated and put first")
    for wrong in range(0, 8):
        if wrong != offset and close(out, rotated(x, wrong)):
            raise Fail(f"{what} rotates x as if its first token were at position {wrong}, not {offset}: "
                       "token t of x sits at position offset + t")
    expect_close(out, want, what)


@CHECKS.add("s9.rope.tables", points=2, probe="s9.rope.tables", devices=NUMERIC,
            title="rope_tables gives cos and sin of position * base ** (-2i / head_dim), both halves alike")
def rope_tables(obs, ctx):
    for case, (d, n, base) in TABLE_CASES.items():
        tables = get(obs, case)
        cos, sin = tables["cos"], tables["sin"]
        call = f"rope_tables({d}, {n}, base={base})"
        want_cos, want_sin = kit_tables(d, n, base)
        expect(tuple(cos.shape) == (n, d) and tuple(sin.shape) == (n, d),
               f"{call} returns tables of shapes {tuple(cos.shape)} and {tuple(sin.shape)}; each should be "
               f"(context_length, head_dim) = ({n}, {d})")
        half = want_cos[:, :d // 2]
        if close(cos, half.repeat_interleave(2, -1)) and not close(cos, want_cos):
            raise Fail(f"{call}: each angle sits in two neighbouring columns (the interleaved layout); this lab's "
                       "rotate-half layout repeats the angles as two halves: cat(angles, angles)")
        if close(cos, want_sin) and close(sin, want_cos):
            raise Fail(f"{call} returns (sin, cos); it should return (cos, sin)")
        expect_close(cos, want_cos, f"{call}'s cos (row p, column i: cos(p * base ** (-2 (i mod head_dim/2) / "
                     "head_dim)))")
        expect_close(sin, want_sin, f"{call}'s sin")


@CHECKS.add("s9.rope.formula", points=3, probe="s9.rope.apply", devices=NUMERIC, visibility=VISIBLE,
            title="apply_rope rotates pairs (i, i + head_dim/2): x * cos + rotate_half(x) * sin")
def rope_formula(obs, ctx):
    expect_rotation(get(obs, "at0"), Q, 0, "apply_rope(x, cos, sin) for x of shape (2, 3, 5, 8)")


@CHECKS.add("s9.rope.offset", points=2, probe="s9.rope.apply", devices=NUMERIC,
            title="apply_rope with offset=3 rotates token t at position 3 + t")
def rope_offset(obs, ctx):
    expect_rotation(get(obs, "at3"), Q, 3, "apply_rope(x, cos, sin, offset=3)")


@CHECKS.add("s9.rope.relative", points=2, probe="s9.rope.apply", devices=NUMERIC,
            title="after RoPE a query-key score depends only on how far apart the two positions are")
def rope_relative(obs, ctx):
    scores = get(obs, "relative").double()
    expect(scores.shape == (len(RELATIVE),), f"the scores after RoPE came out of shape {tuple(scores.shape)}; one "
           f"number per pair of positions was expected, {len(RELATIVE)} in all (does apply_rope keep x's shape?)")
    groups = {}
    for (m, n), score in zip(RELATIVE, scores.tolist()):
        groups.setdefault(m - n, []).append(((m, n), score))
    for gap, found in groups.items():
        (m0, n0), first = found[0]
        for (m, n), score in found[1:]:
            expect(abs(score - first) <= 1e-4 * max(1.0, abs(first)),
                   f"the score of a query at {m} and a key at {n} is {score:.4f}, but at {m0} and {n0} (the same "
                   f"distance, {gap}) it is {first:.4f}: rotating both by the same extra angle should change nothing")


@CHECKS.add("s9.rope.norms", points=1, probe="s9.rope.apply", devices=NUMERIC,
            title="apply_rope preserves the length of every query and key vector")
def rope_norms(obs, ctx):
    out = get(obs, "at0").double()
    expect(out.shape == Q.shape, f"apply_rope's output has shape {tuple(out.shape)}, expected {tuple(Q.shape)}")
    ratio = out.norm(dim=-1) / Q.double().norm(dim=-1)
    worst = float((ratio - 1).abs().max())
    expect(worst < 1e-4, f"apply_rope changed the length of some vector by {worst:.1%}; a rotation keeps lengths "
           "(cos^2 + sin^2 = 1 for every pair: are cos and sin of the same angles, on the same pair?)")


@CHECKS.add("s9.rope.contract", points=1, probe="s9.rope.apply", devices=NUMERIC,
            title="apply_rope keeps x's dtype, leaves x unchanged, and raises ValueError past the tables' end")
def rope_contract(obs, ctx):
    # In place first: it spoils every other measurement, and its own diagnosis is the one to read.
    expect(torch.equal(get(obs, "untouched"), Q), "apply_rope changed x in place; return a new tensor")
    out = get(obs, "float64")
    expect(out.dtype == torch.float64, f"apply_rope of a float64 x returns {out.dtype}; it should keep x's dtype "
           "(cast the tables to x.dtype)")
    low = get(obs, "bfloat16")
    expect(low == "bfloat16", f"apply_rope of a bfloat16 x returns {low}; it should keep x's dtype "
           "(cast the tables to x.dtype before multiplying)")
    expect_rotation(out, Q.double(), 1, "apply_rope(x.double(), cos, sin, offset=1)")
    check_value_error(get(obs, "past_end"), "apply_rope(x, cos[:4], sin[:4]) for 5 tokens",
                      "positions 0..4 are past the tables' 4 rows", in_forward=True)
    check_value_error(get(obs, "offset_past"), "apply_rope(x, cos[:6], sin[:6], offset=2) for 5 tokens",
                      "positions 2..6 are past the tables' 6 rows: the offset counts", in_forward=True)
    fits = get(obs, "offset_fits")
    expect(not fits["raised"], f"apply_rope(x, cos[:6], sin[:6], offset=1) for 5 tokens raised {fits['raised']} "
           f"({fits['message']}); positions 1..5 fit in the tables' 6 rows exactly")


@CHECKS.add("s9.rope.odd", points=1, probe="s9.rope.tables", devices=CPU,
            title="rope_tables raises ValueError for an odd head_dim")
def rope_odd(obs, ctx):
    check_value_error(get(obs, "odd"), "rope_tables(5, 4)", "RoPE rotates pairs of dimensions", in_forward=True)


# ---------------------------------------------------------------- the rotary layer

ROPE_LAYER = (f"RopeGroupedQueryAttention({DIM}, {DIM}, {CONTEXT}, num_heads={HEADS}, num_kv_heads={KV_HEADS}, "
              "qkv_bias=True)")


@lru_cache(maxsize=1)
def unrotated():
    """What the layer gives without any rotation: stage 8's GQA with the same weights."""
    from ...probes.stage8 import gqa_weights
    from .stage8 import projections
    weights = gqa_weights(HEADS, KV_HEADS, True, d_in=DIM, d_out=DIM, seed=900)
    return oracles.grouped_query(projections(weights), HEADS, KV_HEADS, X[:, :FULL])


@lru_cache(maxsize=1)
def interleaved_layer():
    """What the layer gives with its RoPE pairs interleaved (dimensions 2i and 2i+1 turning together, the
    layout of Meta's Llama and Mistral), computed here from the probe's known weights."""
    from ...probes.stage8 import gqa_weights
    w = {k: v.double() for k, v in gqa_weights(HEADS, KV_HEADS, True, d_in=DIM, d_out=DIM, seed=900).items()}
    x = X[:, :FULL].double()
    b, n, _ = x.shape

    def heads(name, count):
        out = torch.nn.functional.linear(x, w[f"{name}.weight"], w[f"{name}.bias"])
        return out.view(b, n, count, DIM // HEADS).transpose(1, 2)

    q, k = rotated(heads("W_query", HEADS), 0, "interleaved"), rotated(heads("W_key", KV_HEADS), 0, "interleaved")
    k, v = (t.repeat_interleave(HEADS // KV_HEADS, dim=1) for t in (k, heads("W_value", KV_HEADS)))
    mixed = torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True).transpose(1, 2)
    return torch.nn.functional.linear(mixed.reshape(b, n, DIM), w["out_proj.weight"], w["out_proj.bias"]).float()


def name_interleaved(out, what):
    """Fail naming the layout when ``out`` is the layer's output (base 10000) with its pairs interleaved."""
    interleaved = interleaved_layer()
    if out.shape == interleaved.shape and close(out, interleaved, atol=1e-5, rtol=1e-4):
        raise Fail(f"{what} rotates its queries and keys with the pairs interleaved (dimensions 2i and 2i+1 turning "
                   "together, as Meta's Llama and litgpt lay them out); in this lab dimension i pairs with dimension "
                   "i + head_dim // 2 (rotate_half), as apply_rope's checks say")


def expect_rope_layer(out, golden, what):
    expect(out.shape == golden.shape, f"{what} has shape {tuple(out.shape)}, expected {tuple(golden.shape)}")
    if close(out, unrotated(), atol=1e-5, rtol=1e-4):
        raise Fail(f"{what} equals stage 8's GroupedQueryAttention with the same weights: the queries and keys "
                   "were not rotated (apply_rope on both, after splitting them into heads)")
    for t in range(golden.shape[1]):
        expect_close(out[:, t], golden[:, t], f"{what} at position {t}")


@CHECKS.add("s9.ropegqa.known", points=3, probe="s9.ropegqa.known", devices=NUMERIC,
            title="RopeGroupedQueryAttention with known weights: RoPE on queries and keys, stage 8's attention")
def rope_gqa_known(obs, ctx):
    name_interleaved(get(obs, "base10000"), f"{ROPE_LAYER} on {FULL} tokens")
    expect_rope_layer(get(obs, "base10000"), ctx.golden["base10000"], f"{ROPE_LAYER} on {FULL} tokens")
    expect_rope_layer(get(obs, "base100"), ctx.golden["base100"], "the same layer with rope_base=100.0")


ROPE_KNOWN = "s9.ropegqa.known"  # the full forward's golden outputs, which decoding with a cache must give


@CHECKS.add("s9.ropegqa.cache", points=3, probe="s9.ropegqa.cache", devices=NUMERIC, golden_of=(ROPE_KNOWN,),
            title="decoding with the cache equals the full forward: rotated keys cached, token p rotated at p")
def rope_gqa_cache(obs, ctx):
    steps, golden = get(obs, "steps"), ctx.golden["steps"]
    out, full = steps["out"], ctx.golden_of[ROPE_KNOWN]["base10000"]
    expect(len(steps["cache"]) == 2, f"{ROPE_LAYER} should return a cache (keys, values)")
    keys, want_keys = steps["cache"][0], golden["cache"][0]
    expect(out.shape == full.shape, f"{ROPE_LAYER}, fed one token at a time: the outputs put together have shape "
           f"{tuple(out.shape)}, expected {tuple(full.shape)}")
    expect(keys.shape == want_keys.shape, f"{ROPE_LAYER}: after {FULL} tokens the cache's keys have shape "
           f"{tuple(keys.shape)}, expected {tuple(want_keys.shape)}")
    name_interleaved(out, f"{ROPE_LAYER}, fed one token at a time,")
    if out.shape == full.shape and close(out[:, :1], full[:, :1]) and not close(out, full):
        t = next(t for t in range(full.shape[1]) if not close(out[:, t], full[:, t]))
        own = obs.get("full") if isinstance(obs, dict) else None
        if not (type(own) is torch.Tensor and own.shape == full.shape and close(own, full)):
            raise Fail(f"{ROPE_LAYER}, fed one token at a time: position 0 is right, position {t} is not, and its "
                       "full forward is wrong too (s9.ropegqa.known): a lone first token does not depend on RoPE, "
                       "so look at the rotation itself before the cache")
        raise Fail(f"{ROPE_LAYER}, fed one token at a time: position 0 is right, position {t} is not. A token "
                   f"decoded after a cache of {t} token{'s' if t != 1 else ''} sits at position {t}: rotate it with "
                   f"offset={t} (the cache's length)")
    if not close(keys, want_keys) and close(rotated(keys, 0), want_keys):
        raise Fail(f"{ROPE_LAYER}: the cache holds the keys before the rotation; rotate them first, then cache")
    for t in range(full.shape[1]):
        expect_close(out[:, t], full[:, t], f"{ROPE_LAYER}, fed one token at a time, at position {t} (the full "
                     "forward gives the expected value)")
    expect_close(keys, want_keys, f"{ROPE_LAYER}: the cache's keys after {FULL} tokens (rotated at their positions)")


@CHECKS.add("s9.ropegqa.pieces", points=2, probe="s9.ropegqa.cache", devices=NUMERIC, golden_of=(ROPE_KNOWN,),
            title="feeding a prefill and then chunks with the cache equals the full forward")
def rope_gqa_pieces(obs, ctx):
    out, full = get(obs, "pieces"), ctx.golden_of[ROPE_KNOWN]["base10000"]
    expect(out.shape == full.shape, f"{ROPE_LAYER}, fed in pieces: the outputs put together have shape "
           f"{tuple(out.shape)}, expected {tuple(full.shape)}")
    name_interleaved(out, f"{ROPE_LAYER}, fed in pieces,")
    for t in range(full.shape[1]):
        expect_close(out[:, t], full[:, t], f"{ROPE_LAYER}, fed in pieces of {', '.join(map(str, PIECES))} tokens, "
                     f"at position {t}")


@CHECKS.add("s9.ropegqa.context_limit", points=1, probe="s9.ropegqa.limits",
            title="RopeGroupedQueryAttention fills its context exactly with a cache, and raises ValueError one past it")
def rope_gqa_context_limit(obs, ctx):
    check_context_edges(get(obs, "fits"), get(obs, "past"),
                        f"RopeGroupedQueryAttention({DIM}, {DIM}, context_length=10, {HEADS}, {KV_HEADS})", 6, 10)


@CHECKS.add("s9.ropegqa.tables", points=2, probe="s9.ropegqa.tables", devices=MOVES,
            title="RopeGroupedQueryAttention's cos and sin are buffers that move with .to() and stay out of the "
                  "state_dict")
def rope_gqa_tables(obs, ctx):
    rep = get(obs)
    for name in ("cos", "sin"):
        is_buffer, device = rep["tables"][name]["buffer"], rep["tables"][name]["device"]
        expect(is_buffer, f"RopeGroupedQueryAttention.{name} is not a registered buffer, so .to({ctx.device!r}) "
               "does not move it; use self.register_buffer(name, table, persistent=False)")
        expect(device == ctx.device, f"after .to({ctx.device!r}) RopeGroupedQueryAttention.{name} is on {device}")
    saved = [k for k in rep["state_dict"] if k.split(".")[-1] in ("cos", "sin")]
    expect(not saved, f"RopeGroupedQueryAttention's state_dict holds {', '.join(saved)}: the tables follow from the "
           "configuration, so register them with persistent=False (a stage 8 checkpoint then loads as it is)")
    note = forward_failure(rep["forward"], ctx.device, "RopeGroupedQueryAttention")
    if note:
        return note
    expect(rep["forward"] == ctx.device, f"RopeGroupedQueryAttention on {ctx.device} returned an output on "
           f"{rep['forward']}")


# ---------------------------------------------------------------- sliding windows

SWA_LAYER = f"SlidingWindowAttention({DIM}, {DIM}, {CONTEXT}, num_heads={HEADS}, window={WINDOW}, qkv_bias=True)"


@CHECKS.add("s9.swa.as_mha", points=3, probe="s9.swa.as_mha", devices=NUMERIC, golden_of=(STAGE4,),
            title="with a window as long as the input, SlidingWindowAttention is stage 4's MultiHeadAttention")
def swa_as_mha(obs, ctx):
    stage4 = ctx.golden_of[STAGE4]
    for key, label in {"heads2": "2 heads, d_out=4", "heads3_bias": "3 heads, d_out=6, qkv_bias=True"}.items():
        expect_close(get(obs, key), stage4[key], f"SlidingWindowAttention with window=8 and stage 4's known weights "
                     f"({label}), compared with stage 4's MultiHeadAttention")


@CHECKS.add("s9.swa.band", points=3, probe="s9.swa.band", devices=NUMERIC,
            title="each token sees itself and the window - 1 tokens before it: nothing later, nothing older")
def swa_band(obs, ctx):
    what = f"SlidingWindowAttention with window={BAND_WINDOW}"
    check_leak(obs, what)
    jac = get(obs)["jacobian"].double()
    limit = LEAK_LIMIT * max(float(jac.max()), 1e-12)
    T, w = jac.shape[0], BAND_WINDOW
    for t in range(T):
        for s in range(t + 1):
            inside = t - s < w
            if not inside and jac[t, s] > limit:
                raise Fail(f"{what}: the output at position {t} depends on token {s}, {t - s} tokens back; with "
                           f"window={w} it sees only tokens {t - w + 1}..{t} (older keys must be hidden)")
            if inside and jac[t, s] <= limit:
                raise Fail(f"{what}: the output at position {t} does not depend on token {s}, {t - s} back, which "
                           f"is inside its window of {w} (tokens {max(0, t - w + 1)}..{t}, itself included)")


@CHECKS.add("s9.swa.cache", points=3, probe="s9.swa.cache", devices=NUMERIC,
            title="the cache keeps the last window - 1 tokens and never grows past them")
def swa_cache(obs, ctx):
    held = get(obs, "steps")["held"]
    expect(tuple(held.shape) == (X.shape[1], 2), f"{SWA_LAYER}: the cache's sizes could not be read after each of "
           f"{X.shape[1]} tokens fed one at a time")
    for t, (keys, values) in enumerate(held.tolist()):
        want = min(t + 1, WINDOW - 1)
        for name, got in (("keys", keys), ("values", values)):
            expect(got >= 0, f"{SWA_LAYER}: the cache's {name} should be (batch, num_heads, tokens kept, head_dim)")
            expect(got == want, f"{SWA_LAYER}, fed one token at a time: after {t + 1} tokens your cache holds {got} "
                   f"tokens with window {WINDOW}; it should hold {want}"
                   + (" (the window - 1 most recent: drop the older ones)" if got > want else ""))
    held = get(obs, "window1")
    expect(held.dim() == 2 and held.shape[0] == 4 and held.numel() > 0 and bool(held.isfinite().all()),
           "SlidingWindowAttention with window=1: the cache's sizes could not be read after each of 4 tokens")
    kept = int(held.max())
    expect(kept == 0, f"SlidingWindowAttention with window=1, fed one token at a time: your cache holds {kept} tokens; "
           "it should hold none (each token sees only itself). Mind t[:, :, -(window - 1):]: with window 1 that is "
           "t[:, :, -0:], the whole tensor, not an empty one")


@CHECKS.add("s9.swa.rolling", points=3, probe="s9.swa.cache", devices=NUMERIC,
            title="decoding past three windows with the rolling cache equals the full forward with the band mask")
def swa_rolling(obs, ctx):
    full = ctx.golden["full"]
    expect_close(get(obs, "full"), full, f"{SWA_LAYER} on {X.shape[1]} tokens at once")
    for key, how in (("steps", "one token at a time"), ("pieces", "in pieces of 5, 4, 3 and 1 tokens")):
        out = get(obs, key)["out"]
        expect(out.shape == full.shape, f"{SWA_LAYER}, fed {how}: the outputs put together have shape "
               f"{tuple(out.shape)}, expected {tuple(full.shape)}")
        for t in range(full.shape[1]):
            expect_close(out[:, t], full[:, t], f"{SWA_LAYER}, fed {how} with its cache, at position {t}")
    layer = "SlidingWindowAttention(..., context_length=6, window=3)"
    for key, how, why in (
            ("past_context", "one at a time", "the cache never holds more than window - 1"),
            ("past_context_pieces", "in two pieces of 5", "a piece of 5 fits, and the 2 tokens cached before the "
             "second piece do not count against it")):
        past = get(obs, key)
        expect("refused" not in past, f"{layer} refused to decode 10 tokens {how} with its cache "
               f"({past.get('refused')}): context_length bounds the tokens of one call, and with a cache decoding may "
               f"go on past it, as the docstring says ({why})")
        decoded, alone = past["decoded"], past["alone"]
        what = f"{layer} decoding 10 tokens {how}"
        expect(decoded.dim() == alone.dim() == 3 and decoded.shape == alone.shape, f"{what} gave outputs of shape "
               f"{tuple(decoded.shape)} in all; fed each token's window alone, the layer gives {tuple(alone.shape)}")
        for t in range(alone.shape[1]):
            expect_close(decoded[:, t], alone[:, t], f"{what}, at position {t}, against the same layer fed only that "
                         "token's window (the contract lets decoding with a cache go on past context_length)")


@CHECKS.add("s9.swa.errors", points=1, probe="s9.swa.errors",
            title="SlidingWindowAttention raises ValueError for window < 1, heads that do not divide, and a call "
                  "longer than context_length")
def swa_errors(obs, ctx):
    check_value_error(get(obs, "window0"), "SlidingWindowAttention(..., window=0)", "a token always sees itself")
    check_value_error(get(obs, "divisible"), f"SlidingWindowAttention({DIM}, 10, {CONTEXT}, {HEADS}, {WINDOW})",
                                             "4 heads do not divide 10")
    check_value_error(get(obs, "too_long"), "SlidingWindowAttention(..., context_length=6) fed 7 tokens",
                      "more tokens in one call than context_length", in_forward=True)
    fits = get(obs, "fits")
    expect(not fits["raised"], f"SlidingWindowAttention(..., context_length=6) fed 6 tokens raised {fits['raised']} "
           f"({fits['message']}); a call of exactly context_length tokens fits")


shape_contract(CHECKS, "s9.swa", 1, SWA_SHAPES, d_out_wide,
               "SlidingWindowAttention shape contract: dtype and device follow x, input untouched")


layer(CHECKS, "s9.swa", "SlidingWindowAttention", dropout=1, eval=1)


# ---------------------------------------------------------------- latent attention

MLA_LAYER = f"MultiHeadLatentAttention({DIM}, {DIM}, {CONTEXT}, num_heads={HEADS}, latent_dim={LATENT})"


@lru_cache(maxsize=1)
def composed():
    """Multi-head attention whose key and value weights are W_up @ W_down: what MLA must equal."""
    w = mla_weights()
    layer = [SimpleNamespace(weight=w["W_query.weight"], bias=None),
             SimpleNamespace(weight=w["W_key_up.weight"] @ w["W_kv_down.weight"], bias=None),
             SimpleNamespace(weight=w["W_value_up.weight"] @ w["W_kv_down.weight"], bias=None),
             SimpleNamespace(weight=w["out_proj.weight"], bias=w["out_proj.bias"])]
    return oracles.grouped_query(layer, HEADS, HEADS, X[:, :FULL])


def expect_mla(out, what):
    want = composed()
    expect(out.shape == want.shape, f"{what} has shape {tuple(out.shape)}, expected {tuple(want.shape)}")
    for t in range(want.shape[1]):
        expect_close(out[:, t], want[:, t], f"{what} at position {t} (multi-head attention with key weight "
                     "W_key_up.weight @ W_kv_down.weight, likewise for values, gives the expected value)")


@CHECKS.add("s9.mla.as_mha", points=3, probe="s9.mla.known", devices=NUMERIC,
            title="MultiHeadLatentAttention equals multi-head attention with key/value weights W_up @ W_down")
def mla_as_mha(obs, ctx):
    expect_mla(get(obs), f"{MLA_LAYER} with known weights on {FULL} tokens")


@CHECKS.add("s9.mla.cache", points=3, probe="s9.mla.cache", devices=NUMERIC,
            title="the cache holds latent_dim numbers per token (the latents W_kv_down(x)), not keys and values")
def mla_cache(obs, ctx):
    steps = get(obs, "steps")
    for t, shape in enumerate(steps["shapes"]):
        want = [X.shape[0], t + 1, LATENT]
        hint = (f"; {shape[-1]} numbers per token is keys and values, the cache of ordinary attention: cache the "
                f"latent c = W_kv_down(x), {LATENT} numbers, and up-project it in every call"
                if len(shape) == 3 and shape[-1] in (DIM, 2 * DIM) else "")
        expect(shape == want, f"{MLA_LAYER}, fed one token at a time: after token {t} the cache has shape "
               f"{tuple(shape)}, expected {tuple(want)} (batch, tokens so far, latent_dim){hint}")
    latents = torch.nn.functional.linear(X[:, :FULL], mla_weights()["W_kv_down.weight"])
    expect_close(steps["cache"], latents, f"{MLA_LAYER}: the cached latents after {FULL} tokens (W_kv_down(x))")


@CHECKS.add("s9.mla.incremental", points=3, probe="s9.mla.cache", devices=NUMERIC,
            title="decoding one token at a time, or in pieces, with the latent cache equals the full forward")
def mla_incremental(obs, ctx):
    expect_mla(get(obs, "steps")["out"], f"{MLA_LAYER}, fed one token at a time with its cache,")
    expect_mla(get(obs, "pieces")["out"], f"{MLA_LAYER}, fed in pieces of {', '.join(map(str, PIECES))} tokens,")


MLA_PARAMETERS = {"W_query.weight": [12, 10], "W_kv_down.weight": [5, 10], "W_key_up.weight": [12, 5],
                  "W_value_up.weight": [12, 5], "out_proj.weight": [12, 12], "out_proj.bias": [12]}


@CHECKS.add("s9.mla.structure", points=1, probe="s9.mla.structure",
            title="MultiHeadLatentAttention's layers: one shared down-projection to latent_dim, two up-projections")
def mla_structure(obs, ctx):
    expect_parameters(get(obs, "parameters"), MLA_PARAMETERS, "MultiHeadLatentAttention(10, 12, 8, num_heads=3, "
                      "latent_dim=5)", " (nn.Linear weights are (out_features, in_features); only out_proj has a bias)")
    check_value_error(get(obs, "divisible"), f"MultiHeadLatentAttention({DIM}, 10, {CONTEXT}, {HEADS}, {LATENT})",
                                             "4 heads do not divide 10")


@CHECKS.add("s9.mla.context_limit", points=1, probe="s9.mla.cache",
            title="a latent cache may fill context_length exactly, and one that would grow past it raises ValueError")
def mla_context_limit(obs, ctx):
    check_context_edges(get(obs, "fits"), get(obs, "overflow"), "MultiHeadLatentAttention(16, 16, context_length=10, "
                        "4, 6)", 8, 10)


layer(CHECKS, "s9.mla", "MultiHeadLatentAttention", no_leak=2, dropout=1, eval=1)


@CHECKS.add("s9.gradients", points=1, probe="s9.gradients", devices=NUMERIC,
            title="gradients reach every parameter of the three layers")
def gradients(obs, ctx):
    for key, name in (("rope_gqa", "RopeGroupedQueryAttention"), ("swa", "SlidingWindowAttention"),
                      ("mla", "MultiHeadLatentAttention")):
        check_gradients(get(obs, key), name)


def projections_of(d_in, d_out, kv_width, qkv_bias):
    """The contract's parameters of a layer with W_query, W_key, W_value and out_proj (with its bias)."""
    want = {"W_query.weight": [d_out, d_in], "W_key.weight": [kv_width, d_in], "W_value.weight": [kv_width, d_in]}
    if qkv_bias:
        want.update({"W_query.bias": [d_out], "W_key.bias": [kv_width], "W_value.bias": [kv_width]})
    return {**want, "out_proj.weight": [d_out, d_out], "out_proj.bias": [d_out]}


@CHECKS.add("s9.structure", points=1, probe="s9.structure",
            title="RopeGroupedQueryAttention has its GroupedQueryAttention's parameters, SlidingWindowAttention "
                  "the contract's four projections")
def layer_structure(obs, ctx):
    for key, flag in (("bias", ", qkv_bias=True"), ("no_bias", "")):
        rope = get(obs, f"rope_gqa_{key}")
        gqa = obs.get(f"gqa_{key}")
        call = f"RopeGroupedQueryAttention({DIM}, {DIM}, {CONTEXT}, {HEADS}, {KV_HEADS}{flag})"
        if isinstance(gqa, dict) and not is_error_record(gqa):
            # Stage 8's check prices GroupedQueryAttention's own parameters: here only what the rotary layer
            # changes in them, so that one slip in stage 8 is not charged again.
            expect_parameters(rope, gqa, call, " (it extends your GroupedQueryAttention with the same arguments, "
                              "whose parameters it should keep: RoPE's tables are buffers, not parameters)")
        else:
            expect_parameters(rope, projections_of(DIM, DIM, KV_HEADS * (DIM // HEADS), key == "bias"), call)
        expect_parameters(get(obs, f"swa_{key}"), projections_of(DIM, DIM, DIM, key == "bias"),
                          f"SlidingWindowAttention({DIM}, {DIM}, {CONTEXT}, {HEADS}, window={WINDOW}{flag})")


# ---------------------------------------------------------------- contracts shared by the layers


shape_contract(CHECKS, "s9", 1, LAYER_SHAPES, d_out_wide,
               "RopeGroupedQueryAttention and MultiHeadLatentAttention shape contract: dtype and device follow x")


@CHECKS.add("s9.devices", points=1, probe="s9.devices", devices=MOVES,
            title="SlidingWindowAttention and MultiHeadLatentAttention move to another device and make nothing on "
                  "a fixed one")
def layer_devices(obs, ctx):
    """The device family's judge (``judging.check_device``) over both layers, which keep no buffer their
    contract names: the band and the latent cache are made from the input's device."""
    notes = [check_device(get(obs, key), ctx.device, what, buffers=())
             for key, what in (("swa", "SlidingWindowAttention"), ("mla", "MultiHeadLatentAttention"))]
    return "; ".join(note for note in notes if note)


# ---------------------------------------------------------------- what a cache costs

BYTES = {"fp32": 4, "bf16": 2, "fp16": 2, "fp8": 1}


def cost_formula(kind, batch, context, layers, emb, heads, kv_heads, latent, window, dtype):
    head_dim = emb // heads
    per_token = {"mha": 2 * heads * head_dim, "gqa": 2 * (kv_heads or heads) * head_dim, "mla": latent,
                 "swa": 2 * (kv_heads or heads) * head_dim}[kind]
    tokens = min(context, window) if kind == "swa" else context
    return batch * tokens * layers * per_token * BYTES[dtype]


@CHECKS.add("s9.cost", points=3, probe="s9.cost",
            title="kv_cache_bytes gives the cache of MHA, GQA, MQA, MLA and SWA on configurations of its own")
def cost(obs, ctx):
    for case, args in COST_CASES.items():
        kind, batch, context, layers, emb, heads, kv_heads, latent, window, dtype = args
        got, want = get(obs, case), cost_formula(*args)
        call = (f"kv_cache_bytes({kind!r}, batch={batch}, context_length={context}, n_layers={layers}, emb_dim={emb}, "
                f"n_heads={heads}, n_kv_heads={kv_heads}, latent_dim={latent}, window={window}, dtype={dtype!r})")
        if got == want:
            continue
        hints = [(2 * want, "twice too many: is the factor 2 (a key and a value) counted for MLA's one latent?")
                 ] if kind == "mla" else []
        hints += [(want * 4 / BYTES[dtype], "counted 4 bytes per number; the dtype decides"),
                  (want / 2, "half: a key and a value per head and token")]
        if kind == "swa":
            hints.append((cost_formula("gqa", batch, context, layers, emb, heads, kv_heads or heads, None, None,
                                       dtype), "the whole context: a sliding window caches at most window tokens"))
        hint = next((text for value, text in hints if value == got and value != want), "")
        raise Fail(f"{call} is {got:.0f}, not the expected number of bytes" + (f" ({hint})" if hint else ""))


@CHECKS.add("s9.cost.errors", points=1, probe="s9.cost",
            title="kv_cache_bytes raises ValueError for an unknown kind and for a kind without its argument")
def cost_errors(obs, ctx):
    check_value_error(get(obs, "unknown"), "kv_cache_bytes('dense', ...)", "the kinds are mha, gqa, mla and swa",
                      in_forward=True)
    check_value_error(get(obs, "missing"), "kv_cache_bytes('mla', ...) without latent_dim", "mla needs latent_dim",
                      in_forward=True)


CHECKS.pictures(
    draw={"s9.swa.band": lambda o: leak_map(o, f"SlidingWindowAttention, window {BAND_WINDOW}", window=BAND_WINDOW)})
