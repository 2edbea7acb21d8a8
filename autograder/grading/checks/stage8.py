"""Stage 8 judges: grouped-query attention, the KV cache, fast attention and its speed.

The expected outputs come from three places, none of them golden data of this stage: stage 4's
reference (a GQA layer with as many key/value heads as heads, and the fast layer, must give its
outputs for its weights), PyTorch's ``nn.MultiheadAttention`` with the key/value heads repeated
(``oracles.grouped_query``, computed here in the grading process), and the student's own inputs.
"""
from functools import lru_cache
from types import SimpleNamespace

import torch

from ...probes.common import DROPOUT_P
from ...probes.stage8 import (CONTEXT, DIM, FAST_SHAPES, GQA_SHAPES, GROUPED, HEAD_DIM, HEADS, KV, KV_HEADS,
                              PARAMETER_CONFIGS, PIECES, X, Y, gqa_weights)
from ...public import oracles, speed
from ..families import d_out_wide, layer, shape_contract
from ..judging import check_context_edges, check_value_error, expect, expect_close, get, same
from ..pictures import cache_errors
from ..registry import CPU, NUMERIC, VISIBLE, Checks, Fail, Note

CHECKS = Checks(8)
CHECKS.look("GroupedQueryAttention", "GroupedQueryAttention(3, 4, 6, 2, 1)")

# What a passed speed check measures, as Gradescope's leaderboard names it (lower is better).
SPEED = "Stage 8: time of your FastMultiHeadAttention over the kit's"
STAGE4_CASES = {"heads2": "2 heads, d_out=4", "heads3_bias": "3 heads, d_out=6, qkv_bias=True",
                "heads4": "4 heads, d_out=8"}


def projections(weights):
    return [SimpleNamespace(weight=weights[f"{n}.weight"], bias=weights.get(f"{n}.bias"))
            for n in ("W_query", "W_key", "W_value", "out_proj")]


@lru_cache(maxsize=None)  # the same few cases, judged for every submission: PyTorch runs once per case
def expected(x, heads, kv_heads, bias):
    return oracles.grouped_query(projections(gqa_weights(heads, kv_heads, bias)), heads, kv_heads, x)


STAGE4 = "s4.mha.known_weights"  # the probe whose golden outputs these layers must reproduce


def same_as_stage4(obs, ctx, cases, what):
    stage4 = ctx.golden_of[STAGE4]
    for key, label in cases.items():
        expect_close(get(obs, key), stage4[key], f"{what} output with stage 4's known weights ({label}), "
                     "compared with stage 4's MultiHeadAttention")


# ---------------------------------------------------------------- grouped-query attention

@CHECKS.add("s8.repeat_kv", points=2, probe="s8.repeat_kv", devices=NUMERIC,
            title="repeat_kv repeats every key/value head for its group of query heads, in order")
def repeat_kv(obs, ctx):
    t = KV
    for groups in (1, 2, 4):
        out, call = get(obs, f"groups{groups}"), f"repeat_kv(t, {groups}) for t of shape {tuple(t.shape)}"
        want = t.repeat_interleave(groups, dim=1)
        expect(out.shape == want.shape, f"{call} has shape {tuple(out.shape)}, expected {tuple(want.shape)}")
        wrong = [h for h in range(want.shape[1]) if not same(out[:, h], want[:, h])]
        if wrong:
            tiled = same(out, t.repeat(1, groups, 1, 1))
            raise Fail(f"{call}: head {wrong[0]} should be a copy of key/value head {wrong[0] // groups}"
                       + (": the heads come out tiled (0, 1, 2, 0, 1, 2, ...), as t.repeat gives; query heads "
                          "are grouped (0, 0, 1, 1, 2, 2, ...), as t.repeat_interleave gives" if tiled else ""))


@CHECKS.add("s8.gqa.as_mha", points=3, probe="s8.gqa.as_mha", devices=NUMERIC, golden_of=(STAGE4,),
            title="GroupedQueryAttention with num_kv_heads == num_heads is stage 4's MultiHeadAttention")
def gqa_as_mha(obs, ctx):
    same_as_stage4(obs, ctx, STAGE4_CASES, "GroupedQueryAttention(..., num_kv_heads=num_heads)")


@CHECKS.add("s8.gqa.grouped", points=4, probe="s8.gqa.grouped", devices=NUMERIC,
            title="MQA and GQA equal multi-head attention with each key/value head repeated for its group")
def gqa_grouped(obs, ctx):
    for case, (heads, kv_heads, bias) in GROUPED.items():
        g = heads // kv_heads
        expect_close(get(obs, case), expected(X, heads, kv_heads, bias),
                     f"GroupedQueryAttention({DIM}, {DIM}, {CONTEXT}, num_heads={heads}, num_kv_heads={kv_heads}"
                     f"{', qkv_bias=True' if bias else ''}) output, against nn.MultiheadAttention with key/value "
                     f"head j serving query heads {g}*j to {g}*j+{g - 1}")


shape_contract(CHECKS, "s8.gqa", 2, GQA_SHAPES, d_out_wide,
               "GroupedQueryAttention shape contract for MQA, GQA and MHA: dtype and device follow x, input untouched")


@CHECKS.add("s8.gqa.parameters", points=2, probe="s8.gqa.parameters",
            title="GroupedQueryAttention's key/value projections have num_kv_heads * head_dim outputs")
def gqa_parameters(obs, ctx):
    for case, (d_in, d_out, heads, kv_heads, bias) in PARAMETER_CONFIGS.items():
        shapes = get(obs, case)
        kv = kv_heads * (d_out // heads)
        want = {"W_query.weight": [d_out, d_in], "W_key.weight": [kv, d_in], "W_value.weight": [kv, d_in],
                "out_proj.weight": [d_out, d_out], "out_proj.bias": [d_out]}
        if bias:
            want.update({"W_query.bias": [d_out], "W_key.bias": [kv], "W_value.bias": [kv]})
        call = f"GroupedQueryAttention({d_in}, {d_out}, 16, num_heads={heads}, num_kv_heads={kv_heads}" + (
            ", qkv_bias=True)" if bias else ")")
        for name, shape in want.items():
            expect(name in shapes, f"{call} has no parameter {name}")
            expect(shapes[name] == shape, f"{call}.{name} has shape {tuple(shapes[name])}, expected {tuple(shape)}"
                   + (f": {kv_heads} key/value heads of {d_out // heads} dimensions" if "W_key" in name
                      or "W_value" in name else ""))
        extra = sorted(set(shapes) - set(want))
        expect(not extra, f"{call} has parameters besides the four projections: {', '.join(extra)}")
        count = sum(torch.Size(s).numel() for s in shapes.values())
        expect(count == sum(torch.Size(s).numel() for s in want.values()), f"{call} has {count:,} parameters")


@CHECKS.add("s8.gqa.divisibility", points=1, probe="s8.gqa.divisibility",
            title="GroupedQueryAttention raises ValueError when heads or key/value heads do not divide",
            visibility=VISIBLE)
def gqa_divisibility(obs, ctx):
    check_value_error(get(obs, "heads"), f"GroupedQueryAttention({DIM}, 6, {CONTEXT}, num_heads=4, num_kv_heads=2)",
                      "d_out 6 is not divisible by 4 heads")
    check_value_error(get(obs, "kv_heads"), f"GroupedQueryAttention({DIM}, {DIM}, {CONTEXT}, num_heads=4, "
                      "num_kv_heads=3)", "4 query heads cannot be shared out among 3 key/value heads")


layer(CHECKS, "s8.gqa", "GroupedQueryAttention", no_leak=2, dropout=1, eval=1)


# ---------------------------------------------------------------- the KV cache

CACHED = f"GroupedQueryAttention({DIM}, {DIM}, {CONTEXT}, num_heads={HEADS}, num_kv_heads={KV_HEADS}, qkv_bias=True)"


def expect_decoded(out, x, how):
    """Outputs of decoding ``x`` with a cache, against the full causal forward, position by position."""
    want = expected(x, HEADS, KV_HEADS, True)
    expect(out.shape == want.shape, f"{CACHED}, fed {how}: the outputs put together have shape "
           f"{tuple(out.shape)}, expected {tuple(want.shape)}")
    for t in range(want.shape[1]):
        expect_close(out[:, t], want[:, t], f"{CACHED}, fed {how}: the output at position {t} (the full causal "
                     f"forward over tokens 0..{t} gives the expected value)")


@CHECKS.add("s8.cache.heads", points=2, probe="s8.cache", devices=NUMERIC,
            title="the KV cache holds num_kv_heads heads of projected keys and values, one more token per step")
def cache_heads(obs, ctx):
    steps = get(obs, "steps")
    expect(len(steps["shapes"]) == X.shape[1] and len(steps["cache"]) == 2,
           f"{CACHED}, fed one token at a time, should return a cache (keys, values) after each of {X.shape[1]} tokens")
    for t, shapes in enumerate(steps["shapes"]):
        want = [X.shape[0], KV_HEADS, t + 1, HEAD_DIM]
        for name, shape in zip(("keys", "values"), shapes):
            expect(shape == want, f"{CACHED}, fed one token at a time: after token {t} the cache's {name} have "
                   f"shape {tuple(shape)}, expected {tuple(want)} (batch, num_kv_heads, tokens so far, head_dim)"
                   + (f"; {HEADS} heads means the keys were repeated before caching: cache the {KV_HEADS} "
                      "key/value heads and repeat them only for the scores" if shape[1:2] == [HEADS] else ""))
    weights = gqa_weights(HEADS, KV_HEADS, True)
    for i, name in enumerate(("keys", "values")):
        layer = "W_key" if i == 0 else "W_value"
        projected = torch.nn.functional.linear(X, weights[f"{layer}.weight"], weights[f"{layer}.bias"])
        want = projected.view(*X.shape[:2], KV_HEADS, HEAD_DIM).transpose(1, 2)
        expect_close(steps["cache"][i], want, f"the cache's {name} after the whole sequence ({layer}(x), "
                     "split into key/value heads)")


@CHECKS.add("s8.cache.incremental", points=4, probe="s8.cache", devices=NUMERIC,
            title="decoding one token at a time with the cache equals the full causal forward, at every position")
def cache_incremental(obs, ctx):
    expect_decoded(get(obs, "steps", "out"), X, "one token at a time with its cache")


@CHECKS.add("s8.cache.pieces", points=2, probe="s8.cache", devices=NUMERIC,
            title="feeding several tokens at once after a cache (prefill, then chunks) equals the full forward")
def cache_pieces(obs, ctx):
    expect_decoded(get(obs, "pieces"), X, f"in pieces of {', '.join(map(str, PIECES))} tokens, each with the cache "
                   "of the pieces before (a piece's tokens see the cache and the earlier tokens of the piece)")


@CHECKS.add("s8.cache.reset", points=2, probe="s8.cache", devices=NUMERIC,
            title="cache=None starts a new sequence: the module keeps no state between calls")
def cache_reset(obs, ctx):
    expect_decoded(get(obs, "reset"), Y, "a second sequence one token at a time, starting again with cache=None "
                   "after decoding a first one")


@CHECKS.add("s8.cache.context_limit", points=1, probe="s8.cache",
            title="a cache may fill context_length exactly, and one that would grow past it raises ValueError")
def cache_context_limit(obs, ctx):
    check_context_edges(get(obs, "fits"), get(obs, "overflow"), CACHED, 6, CONTEXT)


# ---------------------------------------------------------------- fast attention

@CHECKS.add("s8.fast.known_weights", points=3, probe="s8.fast.known_weights", devices=NUMERIC, golden_of=(STAGE4,),
            title="FastMultiHeadAttention with qkv = [W_query; W_key; W_value] equals stage 4's MultiHeadAttention")
def fast_known(obs, ctx):
    same_as_stage4(obs, ctx, dict(STAGE4_CASES, heads1="1 head, d_out=4"), "FastMultiHeadAttention")


@CHECKS.add("s8.fast.structure", points=1, probe="s8.fast.structure",
            title="FastMultiHeadAttention has one fused qkv = nn.Linear(d_in, 3 * d_out) and out_proj, nothing else")
def fast_structure(obs, ctx):
    for case, bias in (("bias", True), ("no_bias", False)):
        r, call = get(obs, case), f"FastMultiHeadAttention(6, 6, 8, 0.0, 2, qkv_bias={bias})"
        for name, shape, has_bias in (("qkv", [18, 6], bias), ("out_proj", [6, 6], True)):
            layer = r["layers"][name]
            expect(layer["linear"], f"{call}.{name} should be an nn.Linear")
            expect(layer["shape"] == shape, f"{call}.{name}.weight has shape {tuple(layer['shape'])}, "
                   f"expected {tuple(shape)}" + (": one layer for queries, keys and values" if name == "qkv" else ""))
            expect(layer["bias"] == has_bias, f"{call}.{name} should {'have' if has_bias else 'not have'} a bias")
        extra = [n for n in r["parameters"] if n.split(".")[0] not in ("qkv", "out_proj")]
        expect(not extra, f"{call} has parameters besides qkv and out_proj: {', '.join(extra)}")


@CHECKS.add("s8.fast.sdpa", points=1, probe="s8.fast.sdpa",
            title="FastMultiHeadAttention calls F.scaled_dot_product_attention once per forward")
def fast_sdpa(obs, ctx):
    r = get(obs)
    expect(r["calls"] >= 1, "FastMultiHeadAttention.forward never calls F.scaled_dot_product_attention; "
           "the point of this layer is PyTorch's fused attention kernel")
    expect(r["calls"] == 1, f"FastMultiHeadAttention.forward calls F.scaled_dot_product_attention {r['calls']} "
           "times; one call handles every head at once (shape (batch, heads, tokens, head_dim))")


shape_contract(CHECKS, "s8.fast", 1, FAST_SHAPES, d_out_wide,
               "FastMultiHeadAttention shape contract: batches, short inputs, d_in != d_out, dtype, input untouched")


@CHECKS.add("s8.fast.divisibility", points=1, probe="s8.fast.divisibility",
            title="FastMultiHeadAttention raises ValueError when d_out is not divisible by num_heads",
            visibility=VISIBLE)
def fast_divisibility(obs, ctx):
    check_value_error(obs, "FastMultiHeadAttention(4, 6, 8, 0.0, num_heads=4)", "6 is not divisible by 4 heads")


layer(CHECKS, "s8.fast", "FastMultiHeadAttention", no_leak=2, dropout=2, eval=1, gradients=1, titles={
    "dropout": f"FastMultiHeadAttention dropout (p={DROPOUT_P}) acts on the attention weights in train mode",
    "eval": "FastMultiHeadAttention in eval mode is deterministic and equals dropout=0 (dropout_p=0.0 in eval)"})


@CHECKS.add("s8.fast.speed", points=4, probe="s8.fast.speed", devices=CPU,
            title=f"FastMultiHeadAttention takes at most {speed.LIMIT}x the time of the kit's fast reference "
             f"({speed.SIZE['tokens']} tokens, CPU)", visibility=VISIBLE)
def fast_speed(obs, ctx):
    report = get(obs)
    passed, text = speed.verdict(report)
    expect(passed, text)
    return Note(text, {SPEED: speed.median_ratio(report)})


CHECKS.pictures(draw={"s8.cache": lambda o: cache_errors(o, "GroupedQueryAttention")})
