"""Stage 4 judges: multi-head attention."""
from ...probes.stage4 import MHA_SHAPES, WRAPPER_SHAPES
from ...public import book
from ..families import d_out_wide, layer, seeded, shape_contract
from ..judging import BIAS_CASES, check_value_error, check_shapes, expect, expect_golden, get
from ..pictures import seen_weights
from ..registry import NUMERIC, VISIBLE, Checks, Fail

CHECKS = Checks(4)
CHECKS.look("MultiHeadAttention", "MultiHeadAttention(3, 2, 6, 0.0, num_heads=2)")


seeded(CHECKS, "s4.wrapper", "MultiHeadAttentionWrapper", 2, book.MHA_WRAPPER,
       "MultiHeadAttentionWrapper(3, 2, 6, 0.0, num_heads=2)(batch)")


@CHECKS.add("s4.wrapper.structure", points=1, probe="s4.wrapper.structure",
            title="MultiHeadAttentionWrapper.heads is an nn.ModuleList of num_heads CausalAttention modules")
def wrapper_structure(obs, ctx):
    for key, n in (("heads1", 1), ("heads4", 4)):
        r = get(obs, key)
        expect(r["is_module_list"], "MultiHeadAttentionWrapper.heads should be an nn.ModuleList "
               "(a plain list hides the heads' parameters from the module)")
        expect(r["count"] == n, f"with num_heads={n}, heads has {r['count']} entries")
        expect(r["all_causal"], "every entry of heads should be a CausalAttention from causal.py")


@CHECKS.add("s4.wrapper.known_weights", points=2, probe="s4.wrapper.known_weights", devices=NUMERIC,
            title="MultiHeadAttentionWrapper output with known weights per head")
def wrapper_known(obs, ctx):
    expect_golden(obs, ctx.golden, {"heads3": "3 heads", "heads1_bias": "1 head, qkv_bias=True"},
                  "MultiHeadAttentionWrapper")


@CHECKS.add("s4.wrapper.shapes", points=1, probe="s4.wrapper.shapes", devices=NUMERIC,
            title="MultiHeadAttentionWrapper output width is num_heads * d_out")
def wrapper_shapes(obs, ctx):
    check_shapes(obs, WRAPPER_SHAPES, lambda cfg: [cfg["x"][0], cfg["x"][1], cfg["heads"] * cfg["d_out"]])


seeded(CHECKS, "s4.mha", "MultiHeadAttention", 2, book.MHA, "MultiHeadAttention(3, 2, 6, 0.0, num_heads=2)(batch)",
       owns_widths=True)  # every other probe of the layer is square: model code's layers answer them too


@CHECKS.add("s4.mha.known_weights", points=4, probe="s4.mha.known_weights", devices=NUMERIC,
            title="MultiHeadAttention output with known weights, 1 to 4 heads, with and without qkv_bias")
def mha_known(obs, ctx):
    expect_golden(obs, ctx.golden, {"heads1": "1 head", "heads2": "2 heads", "heads4": "4 heads, d_out=8",
                                "heads3_bias": "3 heads, d_out=6, qkv_bias=True"}, "MultiHeadAttention")


shape_contract(CHECKS, "s4.mha", 2, MHA_SHAPES, d_out_wide,
               "MultiHeadAttention shape contract: batches, short inputs, heads, dtype, input untouched")


@CHECKS.add("s4.mha.divisibility", points=1, probe="s4.mha.divisibility",
            title="MultiHeadAttention raises ValueError when d_out is not divisible by num_heads", visibility=VISIBLE)
def mha_divisibility(obs, ctx):
    check_value_error(obs, "MultiHeadAttention(4, 6, 8, 0.0, num_heads=4)", "6 is not divisible by 4 heads")


@CHECKS.add("s4.mha.structure", points=1, probe="s4.mha.structure",
            title="MultiHeadAttention has out_proj = nn.Linear(d_out, d_out) with bias, and a mask buffer")
def mha_structure(obs, ctx):
    r = get(obs)
    expect(r["out_proj_linear"], "MultiHeadAttention.out_proj should be an nn.Linear")
    expect(r["out_proj_shape"] == [6, 6], f"out_proj.weight has shape {tuple(r['out_proj_shape'])}, expected (6, 6)")
    expect(r["out_proj_bias"], "out_proj should have a bias (nn.Linear(d_out, d_out))")
    expect(r["mask_is_buffer"], "MultiHeadAttention.mask should be a registered (persistent) buffer")


layer(CHECKS, "s4.mha", "MultiHeadAttention", no_leak=2, dropout=2, eval=1, device=1, gradients=1)


@CHECKS.add("s4.pytorch.known_weights", points=2, probe="s4.pytorch.known_weights", devices=NUMERIC,
            title="MultiHeadAttentionPyTorch wraps nn.MultiheadAttention with a causal mask")
def pytorch_known(obs, ctx):
    try:
        expect_golden(obs, ctx.golden, BIAS_CASES, "MultiHeadAttentionPyTorch")
    except Fail as wrong:
        around = [str(n) for n in get(obs, "parameters") if not str(n).startswith("mha.")]
        if around:  # the likely reason: layers around nn.MultiheadAttention, which holds all it needs
            raise Fail(f"{wrong}; MultiHeadAttentionPyTorch has parameters besides its nn.MultiheadAttention "
                       f"({', '.join(around[:4])}): nn.MultiheadAttention projects queries, keys and values itself "
                       "and already ends in its own output projection (mha.out_proj), so layers around it compute "
                       "another function; the layer is the nn.MultiheadAttention alone") from None
        raise
    raised = get(obs, "d_in_mismatch")
    expect(raised == "ValueError", f"MultiHeadAttentionPyTorch(4, {ctx.golden['no_bias'].shape[-1]}, ...) should raise "
           f"ValueError (nn.MultiheadAttention needs d_in == d_out); it {'raised ' + raised if raised else 'did not'}")


layer(CHECKS, "s4.pytorch", "MultiHeadAttentionPyTorch", no_leak=1,
      titles={"no_leak": "MultiHeadAttentionPyTorch is causal"})


@CHECKS.add("s4.param_count", points=1, probe="s4.param_count",
            title="count_parameters, and 2,360,064 parameters for GPT-2 size", visibility=VISIBLE)
def param_count(obs, ctx):
    r = get(obs)
    expect(r["kit_counted_gpt2"] == book.GPT2_MHA_PARAMETERS,
           f"MultiHeadAttention(768, 768, 1024, 0.0, num_heads=12) has {r['kit_counted_gpt2']:,} parameters, "
           f"expected {book.GPT2_MHA_PARAMETERS:,}")
    expect(r["student_counted_gpt2"] == r["kit_counted_gpt2"],
           f"count_parameters gives {r['student_counted_gpt2']:,} for the GPT-2 size module, "
           f"which has {r['kit_counted_gpt2']:,}")
    expect(r["student_counted_small"] == 30, f"count_parameters gives {r['student_counted_small']} for "
           "nn.Sequential(nn.Linear(7, 3), nn.Linear(3, 2, bias=False)), which has 30")


CHECKS.pictures(draw={
    "s4.wrapper.seeded": lambda o: seen_weights(o, "MultiHeadAttentionWrapper, seed 123", True),
    "s4.mha.seeded": lambda o: seen_weights(o, "MultiHeadAttention, seed 123", True),
})
