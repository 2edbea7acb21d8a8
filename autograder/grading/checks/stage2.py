"""Stage 2 judges: self-attention with trainable weights."""
from ...public import book
from ..families import seeded
from ..judging import LAYER, check_gradients, expect, expect_book, expect_close, get
from ..pictures import seen_weights
from ..registry import NUMERIC, VISIBLE, Checks

CHECKS = Checks(2)
CHECKS.look("SelfAttention_v2", "SelfAttention_v2(3, 2)")


@CHECKS.add("s2.one_query.book", points=2, probe="s2.one_query", devices=NUMERIC,
            title="attend_one_query reproduces the step-by-step example", visibility=VISIBLE)
def one_query_book(obs, ctx):
    returned = get(obs, "book")
    expect(len(returned) == 3, "attend_one_query should return (attn_scores, attn_weights, context_vec)")
    scores, weights, context = returned
    expect_book(scores, book.STEP_SCORES_2, "attn_scores_2")
    expect_book(weights, book.STEP_WEIGHTS_2,
                "attn_weights_2 (softmax of the scores divided by sqrt(d_k), d_k = the key width)")
    expect_book(context, book.STEP_CONTEXT_2, "context_vec_2")


@CHECKS.add("s2.one_query.other", points=1, probe="s2.one_query", devices=NUMERIC,
            title="attend_one_query on other sizes (d_in=5, d_out=4)")
def one_query_other(obs, ctx):
    for got, want, name in zip(get(obs, "extra"), ctx.golden["extra"], ("attn_scores", "attn_weights", "context_vec")):
        expect_close(got, want, f"{name} with d_in=5, d_out=4")


seeded(CHECKS, "s2.v1", "SelfAttention_v1", 2, book.SA_V1,
       "SelfAttention_v1(3, 2)(inputs) after torch.manual_seed(123)", seed=123, batch=False)


@CHECKS.add("s2.v1.known_weights", points=2, probe="s2.v1.known_weights", devices=NUMERIC,
            title="SelfAttention_v1 computes scaled dot-product attention (known weights, d_in=5, d_out=4)")
def v1_known(obs, ctx):
    result = get(obs)
    bad = [n for n, kind in result["kinds"].items() if kind != "Parameter"]
    expect(not bad, f"SelfAttention_v1.{bad[0] if bad else ''} should be an nn.Parameter")
    expect_close(result["out"], ctx.golden["out"], "SelfAttention_v1 output", dtype=LAYER)


seeded(CHECKS, "s2.v2", "SelfAttention_v2", 2, book.SA_V2,
       "SelfAttention_v2(3, 2)(inputs) after torch.manual_seed(789)", seed=789, batch=False)


@CHECKS.add("s2.v2.known_weights", points=2, probe="s2.v2.known_weights", devices=NUMERIC,
            title="SelfAttention_v2 with nn.Linear layers, with and without qkv_bias")
def v2_known(obs, ctx):
    for key in ("no_bias", "bias"):
        result = get(obs, key)
        bad = [n for n, kind in result["kinds"].items() if kind != "Linear"]
        expect(not bad, f"SelfAttention_v2.{bad[0] if bad else ''} should be an nn.Linear")
        expect(result["has_bias"] == (key == "bias"),
               f"SelfAttention_v2(..., qkv_bias={key == 'bias'}): W_query.bias should "
               f"{'exist' if key == 'bias' else 'be None'}")
        expect_close(get(result, "out"), ctx.golden[key]["out"], f"SelfAttention_v2 output (qkv_bias={key == 'bias'})",
                     dtype=LAYER)


@CHECKS.add("s2.copy_v2_into_v1", points=2, probe="s2.copy", devices=NUMERIC,
            title="copy_v2_into_v1 makes both versions agree")
def copy_v2_into_v1(obs, ctx):
    result = get(obs)
    expect(result["returned_v1"], "copy_v2_into_v1 should return the SelfAttention_v1 it filled")
    expect_close(result["v1"], result["v2"], "SelfAttention_v1 output after copying (compared with v2's)",
                 reveal=True)


@CHECKS.add("s2.gradients", points=1, probe="s2.gradients", devices=NUMERIC,
            title="gradients reach every weight of v1 and v2")
def gradients(obs, ctx):
    check_gradients(obs["v1"], "SelfAttention_v1")
    check_gradients(obs["v2"], "SelfAttention_v2")


CHECKS.pictures(draw={
    "s2.v1.seeded": lambda o: seen_weights(o, "SelfAttention_v1(3, 2), seed 123", False),
    "s2.v2.seeded": lambda o: seen_weights(o, "SelfAttention_v2(3, 2), seed 789", False),
})
