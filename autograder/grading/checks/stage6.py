"""Stage 6 judges: the fused projection, padding masks, attention dropout, q/k/v/o heads."""
from ...public.feedback import is_error_record
from ...public.pictures import Picture, heatmap, row_sum_problem
from ...probes.stage6 import ALL_PADDED, FUSED_SHAPES, KEYS, MASKED_SHAPES, MHSA_SHAPES, PROJ
from ..families import layer, like_x, shape_contract
from ..judging import (ALL_HIDDEN_HINT, check_gradients, check_padding, check_value_error, expect, expect_close,
                       expect_finite, expect_golden, failure, get)
from ..pictures import observed_tensor
from ..registry import NUMERIC, VISIBLE, Checks

CHECKS = Checks(6)
CHECKS.look("SelfAttentionFused", "SelfAttentionFused(3)")

MASKED_CASES = {"none": "no mask", "keys": "a (batch, seq) padding mask",
                "pairs": "a (batch, seq, seq) mask, causal and padded"}
MHSA_CASES = {"none": "no mask", "keys": "a (batch, 1, 1, seq) padding mask",
              "shared": "one (seq, seq) causal mask for all", "per_head": "a different mask per head",
              "heads_of_6": "3 heads of 6 dimensions, no mask"}


@CHECKS.add("s6.softmax", points=2, probe="s6.softmax", devices=NUMERIC,
            title="masked_softmax hides keys where the mask is 0 and keeps fully hidden rows finite")
def masked_softmax(obs, ctx):
    cases = {"none": "no mask", "keys": "a mask of padded keys", "pairs": "a (batch, seq, seq) mask"}
    expect_golden(obs, ctx.golden, cases, "masked_softmax")
    weights = get(obs, "all_hidden")
    scores = tuple(ctx.golden["all_hidden"].shape)
    expect(tuple(weights.shape) == scores, f"masked_softmax(scores, mask) has shape {tuple(weights.shape)} for "
           f"scores of shape {scores}; it should keep their shape")
    expect_finite(weights, "masked_softmax(scores, mask)", ALL_HIDDEN_HINT)
    own_dtype = (": fill with the most negative number of the scores' own dtype, torch.finfo(scores.dtype).min "
                 "(float32's minimum does not fit in bfloat16: it is -inf there, or an error, and a row of -inf is "
                 "nan after the softmax)")
    low = obs.get("all_hidden_bfloat16")
    if is_error_record(low):  # what was raised; the fill is named only when the error is a fill's overflow
        overflow = "without overflow" in str(low["error"].get("message", ""))
        raise failure(low["error"], "masked_softmax(scores.bfloat16(), mask): ", own_dtype if overflow else "")
    expect_finite(get(obs, "all_hidden_bfloat16"), "masked_softmax(scores.bfloat16(), mask)", own_dtype)
    visible = ALL_PADDED.any(dim=-1)  # sequences with at least one real key
    expect_close(weights[visible], ctx.golden["all_hidden"][visible],
                 "masked_softmax output for sequences with real keys")


@CHECKS.add("s6.fused.known_weights", points=3, probe="s6.fused.known_weights", devices=NUMERIC,
            title="SelfAttentionFused with qkv.weight = [W_q; W_k; W_v] equals three separate projections")
def fused_known(obs, ctx):
    expect_close(get(obs, "fused"), ctx.golden["fused"],
                 "SelfAttentionFused output (qkv packed as queries, keys, values; scale 1/sqrt(dim))")


@CHECKS.add("s6.fused.structure", points=1, probe="s6.fused.structure",
            title="SelfAttentionFused has one nn.Linear(dim, 3 * dim) named qkv, and nothing else")
def fused_structure(obs, ctx):
    r = get(obs)
    expect(r["qkv_linear"], "SelfAttentionFused.qkv should be an nn.Linear")
    expect(r["qkv_shape"] == [18, 6], f"SelfAttentionFused(6).qkv.weight has shape {tuple(r['qkv_shape'])}, "
           "expected (18, 6): one layer for queries, keys and values together")
    expect(r["qkv_bias"], "SelfAttentionFused.qkv should have a bias")
    extra = [n for n in r["parameters"] if not n.startswith("qkv.")]
    expect(not extra, f"SelfAttentionFused has parameters besides qkv: {', '.join(extra)}; "
           "the point is one fused layer")


shape_contract(CHECKS, "s6.fused", 1, FUSED_SHAPES, like_x,
               "SelfAttentionFused shape contract: (batch, seq, dim) in and out, dtype and device follow x")


def layer_checks(key, cls, known, equivalent, padding_points, shapes):
    """Register the checks MaskedSelfAttention and MultiHeadSelfAttention share, under ``s6.<key>.``.

    ``known``: (points, cases, title) of the known-weights check; ``equivalent``: (check name, title,
    what was compared) of the check that a mask acts like its expansion.
    """
    points, cases, title = known

    @CHECKS.add(f"s6.{key}.known_weights", points=points, probe=f"s6.{key}.known_weights", devices=NUMERIC,
                title=f"{cls} output with known weights ({title})")
    def known_weights(obs, ctx):
        expect_golden(obs, ctx.golden, cases, cls)

    name, title, compared = equivalent

    @CHECKS.add(f"s6.{key}.{name}", points=1, probe=f"s6.{key}.{name}", devices=NUMERIC, title=f"{cls}: {title}")
    def mask_equivalence(obs, ctx):
        r = get(obs)
        expect_close(r["keys"], r["expanded"], f"{cls} output with {compared},", reveal=True)

    @CHECKS.add(f"s6.{key}.padding", points=padding_points, probe=f"s6.{key}.padding", devices=NUMERIC,
                title=f"{cls}: padded keys change nothing, and all-padding rows give no nan")
    def padding(obs, ctx):
        check_padding(get(obs), KEYS == 1, cls)

    layer(CHECKS, f"s6.{key}", cls, dropout=2, eval=1)

    shape_contract(CHECKS, f"s6.{key}", 1, shapes, like_x,
                   f"{cls} shape contract: (batch, seq, dim) in and out, dtype and device follow x")


layer_checks("masked", "MaskedSelfAttention",
             known=(3, MASKED_CASES, "no mask, and masks of both shapes"),
             equivalent=("mask_forms", "a (batch, seq) mask acts like its (batch, seq, seq) expansion",
                         "a (batch, seq) mask, compared with its expansion mask[:, None, :] to (batch, seq, seq)"),
             padding_points=3, shapes=MASKED_SHAPES)
layer_checks("mhsa", "MultiHeadSelfAttention",
             known=(4, MHSA_CASES, "no mask, and masks of every broadcastable shape"),
             equivalent=("broadcast", "a (batch, 1, 1, seq) mask acts like its expansion over heads and queries",
                         "a (batch, 1, 1, seq) mask, compared with the same mask expanded to (batch, heads, seq, seq)"),
             padding_points=2, shapes=MHSA_SHAPES)


@CHECKS.add("s6.mhsa.structure", points=1, probe="s6.mhsa.structure",
            title="MultiHeadSelfAttention has q_proj, k_proj, v_proj, o_proj: nn.Linear(hidden_dim, hidden_dim) with "
                  "bias")
def mhsa_structure(obs, ctx):
    r = get(obs)
    for name in PROJ:
        layer = r[name]
        expect(layer["linear"], f"MultiHeadSelfAttention.{name} should be an nn.Linear")
        expect(layer["shape"] == [12, 12], f"MultiHeadSelfAttention(12, 3).{name}.weight has shape "
               f"{tuple(layer['shape'])}, expected (12, 12)")
        expect(layer["bias"], f"MultiHeadSelfAttention.{name} should have a bias")


@CHECKS.add("s6.mhsa.divisibility", points=1, probe="s6.mhsa.divisibility",
            title="MultiHeadSelfAttention raises ValueError when hidden_dim is not divisible by num_heads",
            visibility=VISIBLE)
def mhsa_divisibility(obs, ctx):
    check_value_error(obs, "MultiHeadSelfAttention(10, 4)", "10 is not divisible by 4 heads")


@CHECKS.add("s6.gradients", points=1, probe="s6.gradients", devices=NUMERIC,
            title="gradients reach every parameter of the three layers")
def gradients(obs, ctx):
    for name in ("SelfAttentionFused", "MaskedSelfAttention", "MultiHeadSelfAttention"):
        check_gradients(get(obs, name), name)

def padded_weights(obs, what) -> list[Picture]:
    """``masked_softmax`` with a padding mask: the padded keys' columns outlined (they must get 0),
    red where the student's weights give them any."""
    weights = observed_tensor(obs, "keys")
    if weights is None or weights.dim() != 3 or tuple(weights.shape) != (len(KEYS), KEYS.shape[-1], KEYS.shape[-1]):
        return []
    b = 1  # the sequence whose last two keys are padding
    w = weights[b].double()
    padded = (KEYS[b] == 0).expand_as(w)
    return [heatmap(w, list(range(w.shape[0])), ["pad" if p else str(j) for j, p in enumerate(KEYS[b] == 0)],
                    f"{what}: your weights with padded keys (a sequence of 3 tokens and 2 pads)", forbidden=padded,
                    flagged=padded & (w.abs() > 1e-6), scale=1.0, kind="weights",
                    note=(f"{off}; " if (off := row_sum_problem(w)) else "")
                    + "outlined: padded keys, which must get 0; each row sums to 1 over the real keys")]


CHECKS.pictures(draw={"s6.softmax": lambda o: padded_weights(o, "masked_softmax")})
