"""Stage 10 judges: a GPT built from the student's own attention.

Where the expected values come from: the formulas of the docstrings (LayerNorm, GELU, the
feed-forward network), written here in float64; PyTorch's own pieces (``F.layer_norm``,
``F.gelu(approximate="tanh")``, ``F.scaled_dot_product_attention``) assembled into the block, to
name *which* layout a wrong block has; the reference's golden data for the known-weights block, the
trained model's logits and tokens, the cached model and the training losses; the book's printed
parameter counts; and the rules of the kit's stand-in models for the two generation loops.
"""
import math

import torch
import torch.nn.functional as F

from ...probes.common import DROPOUT_P
from ...probes.stage10 import (BARE, BARE_SEED, EMBEDDED, GELU_X, HEADS_SAMPLE, NORM_X, PIECES, PROMPTS,
                               RULE_CONTEXT, RULE_NEW, RULE_PROMPT, SMALL, TRAIN_BATCH, TRAIN_STEPS, TRAIN_TOKENS, X,
                               X_MANY, block_weights, causal_attention, ff_weights, gpt_weights, norm_weights,
                               rule_next)
from ...public import tiny_gpt
from ...public.pictures import Picture, head_pictures
from ..judging import (check_eval, check_inverted_dropout, check_leak, close, expect, expect_close, expect_parameters,
                       get, naming_the_part)
from ..pictures import leak_map, observed_tensor
from ..registry import NUMERIC, Checks, Fail

CHECKS = Checks(10)

GPT2_COUNT, GPT2_TIED = 163_009_536, 124_412_160  # the book's two printed counts
# The earlier parts of which the end-to-end checks' twins put the kit's own in the student's models: name, stage
ATTENTION, CACHED_ATTENTION = ("MultiHeadAttention", 4), ("GroupedQueryAttention", 8)
GPT2_ATTENTION = 12 * 2_360_064  # twelve of stage 4's MultiHeadAttention(768, 768), as the book counts one


# ---------------------------------------------------------------- the parts, by their formulas

def layer_norm(x, scale, shift, eps=1e-5, unbiased=False, under_root=True):
    x = x.double()
    centred = x - x.mean(-1, keepdim=True)
    var = x.var(-1, keepdim=True, unbiased=unbiased)
    normed = centred / (torch.sqrt(var + eps) if under_root else torch.sqrt(var) + eps)
    return scale.double() * normed + shift.double()


def gelu(x):
    x = x.double()
    return 0.5 * x * (1 + torch.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x ** 3)))


def feed_forward(weights, x, prefix=""):
    hidden = F.linear(x.double(), weights[f"{prefix}layers.0.weight"].double(),
                      weights[f"{prefix}layers.0.bias"].double())
    return F.linear(gelu(hidden), weights[f"{prefix}layers.2.weight"].double(),
                    weights[f"{prefix}layers.2.bias"].double())


def expect_formula(out, want, what, wrong, tol, out_float32, shape_hint=""):
    """A float64 output against a formula: named when it matches one of the ``wrong`` formulas students
    write ({what it is: values}), then within ``tol``; and the float32 output, in float32."""
    expect(out.shape == want.shape, f"{what} has shape {tuple(out.shape)}, expected {tuple(want.shape)}{shape_hint}")
    for why, values in wrong.items():
        if close(out, values, atol=tol, rtol=tol) and not close(out, want, atol=tol, rtol=tol):
            raise Fail(f"{what} {why}")
    expect_close(out, want, what, atol=tol, rtol=tol, dtype=torch.float64)
    expect_close(out_float32, want, what.replace("float64", "float32"), dtype=torch.float32)


@CHECKS.add("s10.layernorm", points=2, probe="s10.parts", devices=NUMERIC,
            title="LayerNorm: scale * (x - mean) / sqrt(biased var + 1e-5) + shift over the last dimension")
def layernorm(obs, ctx):
    d = NORM_X.shape[-1]
    expect_parameters(get(obs, "norm_shapes"), {"scale": [d], "shift": [d]}, f"LayerNorm({d})")
    weights = norm_weights("", d, 104)
    scale, shift = weights["scale"], weights["shift"]
    wrong = {"matches the unbiased variance (divided by n - 1); the book's LayerNorm divides by n: var(unbiased=False)":
             layer_norm(NORM_X, scale, shift, unbiased=True),
             "matches eps added after the square root; it belongs under it: sqrt(var + eps)":
             layer_norm(NORM_X, scale, shift, under_root=False),
             "matches no eps (or another than 1e-5): a row of nearly equal values shows it":
             layer_norm(NORM_X, scale, shift, eps=0.0),
             "matches scale and shift swapped: scale multiplies, shift is added":
             layer_norm(NORM_X, shift, scale)}
    expect_formula(get(obs, "norm"), layer_norm(NORM_X, scale, shift),
                   "LayerNorm's output for float64 inputs, with known scale and shift", wrong, 1e-7,
                   get(obs, "norm_float32"), " (the input's)")


# GELU's tolerance (absolute and relative) on its 41 float64 values: it must catch the exact erf form, off
# by up to 4.7e-4, and the sigmoid form, 2e-2; it must let through the book's own constant, the float32
# torch.sqrt(torch.tensor(2.0 / torch.pi)), which puts float64 outputs off by up to 7e-9.
GELU_TOL = 1e-6


@CHECKS.add("s10.gelu", points=1, probe="s10.parts", devices=NUMERIC,
            title="GELU is the tanh approximation: 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))")
def gelu_formula(obs, ctx):
    x = GELU_X.double()
    wrong = {"is the exact GELU, x * Phi(x) with erf; GPT-2, and this contract, use the tanh approximation: "
             "0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))); the two differ by up to 5e-4": F.gelu(x),
             "is the sigmoid approximation x * sigmoid(1.702 x); this contract's is the tanh one":
             x * torch.sigmoid(1.702 * x)}
    expect_formula(get(obs, "gelu"), gelu(GELU_X), "GELU on 41 values from -5 to 5 (float64)", wrong, GELU_TOL,
                   get(obs, "gelu_float32"))


@CHECKS.add("s10.feedforward", points=1, probe="s10.parts", devices=NUMERIC,
            title="FeedForward: layers = Linear(d, 4d), GELU, Linear(4d, d)")
def feedforward(obs, ctx):
    d = NORM_X.shape[-1]
    expect_parameters(get(obs, "ff_shapes"), {"layers.0.weight": [4 * d, d], "layers.0.bias": [4 * d],
                                              "layers.2.weight": [d, 4 * d], "layers.2.bias": [d]},
                      f"FeedForward({{'emb_dim': {d}}})", hint=" (layers: nn.Sequential(Linear(d, 4 d), GELU(), "
                      "Linear(4 d, d)), both with a bias)")
    expect_close(get(obs, "ff"), feed_forward(ff_weights("", d, 105), NORM_X[0]), "FeedForward's output with known "
                 "weights", dtype=torch.float32)


# ---------------------------------------------------------------- the block

def block_from_pytorch(x, weights, layout="pre", residuals=(True, True)):
    """A block of known weights assembled from PyTorch's own pieces (no dropout), in ``layout``
    "pre" (the contract), "post" (the paper's: norm after the residual) or "one_norm" (norm1 twice)."""
    d, h = SMALL["emb_dim"], SMALL["n_heads"]
    w = {k: v.double() for k, v in weights.items()}

    def norm(name, t):
        return F.layer_norm(t, (d,), w[f"{name}.scale"], w[f"{name}.shift"], eps=1e-5)

    def attend(t):
        return causal_attention(t, w, "att.", h)

    def ff(t):
        return feed_forward(w, t, "ff.")

    x = x.double()
    second = "norm1" if layout == "one_norm" else "norm2"
    if layout == "post":
        x = norm("norm1", x + attend(x))
        return norm("norm2", x + ff(x))
    x = (x if residuals[0] else 0) + attend(norm("norm1", x))
    return (x if residuals[1] else 0) + ff(norm(second, x))


BLOCK_MISTAKES = {
    ("post", (True, True)): "is post-norm (norm applied after adding the residual, as in the paper and stage 7); "
                            "GPT-2's block normalises first: x + att(norm1(x))",
    ("pre", (False, True)): "has no shortcut around the attention: x = x + drop_shortcut(att(norm1(x)))",
    ("pre", (True, False)): "has no shortcut around the feed-forward network: x + drop_shortcut(ff(norm2(x)))",
    ("pre", (False, False)): "adds neither branch to its input: each sub-layer's result is added to its own input",
    ("one_norm", (True, True)): "uses norm1 before both branches; the feed-forward branch has its own norm2",
}


@CHECKS.add("s10.block.forward", points=3, probe="s10.block", devices=NUMERIC,
            title="TransformerBlock with known weights equals the reference, in eval and in train mode")
def block_forward(obs, ctx):
    weights = block_weights(SMALL, 110)  # what the kit's own parts hold (probes.stage10.known_block)
    for mode in ("eval", "train"):
        out = get(obs, mode)
        what = f"TransformerBlock's output in {mode} mode (dropout 0, known weights)"
        if not close(out, ctx.golden[mode]):
            for (layout, residuals), why in BLOCK_MISTAKES.items():
                if close(out, block_from_pytorch(X, weights, layout, residuals), atol=1e-4, rtol=1e-3):
                    raise Fail(f"{what}: your block {why}")
        expect_close(out, ctx.golden[mode], what, dtype=torch.float32)


@CHECKS.add("s10.block.dropout", points=2, probe="s10.block", devices=NUMERIC,
            title="TransformerBlock and CachedTransformerBlock drop out each branch before adding it back, never "
                  "the shortcut, and only in train mode")
def block_dropout(obs, ctx):
    check_eval(get(obs, "dropout_eval"), "TransformerBlock")
    notes = [branch_dropout(obs, ctx, block, prefix, judged_by) for block, prefix, judged_by in
             (("TransformerBlock", "", "s10.block.forward"), ("CachedTransformerBlock", "cached_", "s10.cached.model"))]
    return "; ".join(note for note in notes if note) or None


def branch_dropout(obs, ctx, block, prefix, judged_by):
    """One block's dropout in train mode, with the kit's parts in it. With both branches silent, against
    the same block in eval mode, not against x: how a block wires its branches is ``judged_by``'s. The
    feed-forward branch, only in a block wired right, against the reference's block without dropout (the
    cached block's eval mode is the end-to-end checks' to judge, so it is not trusted here)."""
    expect(close(get(obs, f"{prefix}silent_train"), get(obs, f"{prefix}silent_eval"), atol=1e-6, rtol=0),
           f"{block} in train mode, with both branches adding exactly 0 (zero output projections), gave another "
           "output than in eval mode: dropout must act on each branch's result, before it is added back, not on "
           "the shortcut or on the sum")
    if not close(get(obs, f"{prefix}eval"), ctx.golden["eval"]):
        return (f"{block}'s feed-forward branch's dropout was not measured: it needs the block's wiring right "
                f"({judged_by})")
    out = get(obs, f"{prefix}ff_train")
    expect(out.shape == X_MANY.shape, f"{block}'s output has shape {tuple(out.shape)}, expected {tuple(X_MANY.shape)}")
    check_inverted_dropout(out.double() - X_MANY.double(), ctx.golden["ff_eval"].double() - X_MANY.double(), DROPOUT_P,
                           block, "of the feed-forward branch (drop_shortcut(ff(norm2(x))))")


# ---------------------------------------------------------------- the model

def small_shapes(cfg=SMALL):
    """The parameters' shapes of ``GPTModel(cfg)`` outside the blocks' attention (see ``outside_attention``)."""
    d, v, c = cfg["emb_dim"], cfg["vocab_size"], cfg["context_length"]
    want = {"tok_emb.weight": [v, d], "pos_emb.weight": [c, d]}
    for i in range(cfg["n_layers"]):
        want.update({f"trf_blocks.{i}.{k}": list(t.shape) for k, t in block_weights(cfg, 0).items()
                     if not k.startswith("att.")})
    want.update({"final_norm.scale": [d], "final_norm.shift": [d], "out_head.weight": [v, d]})
    return want


def outside_attention(names):
    """The names outside the blocks' attention, whose insides are stage 4's and stage 8's to judge."""
    return [str(n) for n in names if ".att." not in str(n)]


@CHECKS.add("s10.gpt.structure", points=2, probe="s10.gpt.structure",
            title="GPTModel's parameter names and shapes, and the book's counts: 163,009,536, or 124,412,160 tied")
def gpt_structure(obs, ctx):
    expect(not get(obs, "tied"), f"GPTModel's out_head shares the token embeddings' matrix (out_head.weight is "
           f"tok_emb.weight: tied). The book's GPTModel has an out_head of its own ({GPT2_COUNT:,} parameters at GPT-2 "
           f"size; {GPT2_TIED:,} is the count once tied, as OpenAI's checkpoint is)")
    shapes = get(obs, "shapes")
    for i in range(SMALL["n_layers"]):
        expect(any(n.startswith(f"trf_blocks.{i}.att.") for n in shapes), f"GPTModel(cfg) has no parameters under "
               f"trf_blocks.{i}.att: each block's attention is its att (your stage 4 MultiHeadAttention)")
    expect_parameters({n: shapes[n] for n in outside_attention(shapes)}, small_shapes(), "GPTModel(cfg)",
                      hint=" (the names are the docstring's, so that a saved state_dict loads into your model)")
    count = get(obs, "count")
    # The attention's own parameters are stage 4's to count (s4.param_count): the book's figure is used for them.
    total = count["total"] - count["attention"] + GPT2_ATTENTION
    head = count["head"]
    expect(total != GPT2_TIED, f"GPTModel(GPT_CONFIG_124M) has {total:,} parameters: that is the count with the output "
           f"head sharing the token embeddings' matrix (tied). The book's GPTModel has an out_head of its own: "
           f"{GPT2_COUNT:,}")
    expect(total == GPT2_COUNT,
           f"GPTModel(GPT_CONFIG_124M) has {total:,} parameters (counting the book's 2,360,064 for "
           f"each attention); the book counts {GPT2_COUNT:,}: a 4x feed-forward network, LayerNorm's scale and shift, "
           "no bias in out_head")
    expect(total - head == GPT2_TIED, f"without its out_head, GPTModel(GPT_CONFIG_124M) has {total - head:,} "
           f"parameters; the book counts {GPT2_TIED:,} (out_head: nn.Linear(emb_dim, vocab_size, bias=False))")
    keys, cached = (set(outside_attention(get(obs, k))) for k in ("keys", "cached_keys"))
    only = sorted(keys ^ cached)
    expect(not only, f"GPTModel and CachedGPTModel save different names ({only[0] if only else ''}, ...); they "
           "should save the same, so that one state_dict loads into both")


@CHECKS.add("s10.gpt.dropout", points=1, probe="s10.gpt.dropout", devices=NUMERIC,
            title="GPTModel and CachedGPTModel: drop_emb is off in eval mode, and drops out the sum of the embeddings "
                  "in train mode")
def gpt_dropout(obs, ctx):
    for key, cls in (("gpt", "GPTModel"), ("cached", "CachedGPTModel")):
        pair = get(obs, key)
        expect_close(pair["dropout"], pair["p0"], f"{cls} with no blocks (n_layers=0): its logits in eval mode with "
                     f"drop_rate={DROPOUT_P} against "
                     "drop_rate=0 (dropout must be off in eval mode: nn.Dropout, or F.dropout with "
                     "training=self.training)")
    weights = gpt_weights(BARE, BARE_SEED)  # what the probe loaded, to name an embedding dropped out alone
    tokens, positions = weights["tok_emb.weight"][EMBEDDED], weights["pos_emb.weight"][:EMBEDDED.shape[1]]
    for key, cls in (("embedding", "GPTModel"), ("cached_embedding", "CachedGPTModel")):
        pair = get(obs, key)
        out, undropped = pair["train"], pair["eval"]
        what = f"{cls} with no blocks (n_layers=0)"
        # Where dropout hit one embedding before the sum, the other is left exactly: name which one it hit.
        for name, left in (("token", positions), ("position", tokens)):
            if out.shape == tokens.shape and float((out.double() == left.double()).double().mean()) > DROPOUT_P / 4:
                raise Fail(f"{what} in train mode with drop_rate={DROPOUT_P}: drop_emb dropped out the {name} "
                           "embeddings alone, before adding them up; it drops out their sum, "
                           "drop_emb(tok_emb(in_idx) + pos_emb(positions))")
        check_inverted_dropout(out, undropped, DROPOUT_P, what, "of the sum of the token and position embeddings "
                               "(what reaches final_norm): drop_emb(tok_emb(in_idx) + pos_emb(positions))")


@CHECKS.add("s10.gpt.causal", points=1, probe="s10.gpt.leak", devices=NUMERIC,
            title="GPTModel is causal: no logit depends on a later token", end_to_end=True,
            twin="s10.gpt.leak.twin")
def gpt_causal(obs, ctx):
    naming_the_part(obs, ctx, lambda o: check_leak(get(o, "leak"), "GPTModel"), *ATTENTION)


# ---------------------------------------------------------------- the trained model

def text(ids) -> str:
    return tiny_gpt.decode([int(i) for i in ids if 0 <= int(i) < len(tiny_gpt.ALPHABET)])


def expect_tokens(tokens, want, what, prompt_length):
    """``tokens`` are ``want``'s, or the check fails showing the first row that differs as text."""
    expect(not tokens.is_floating_point() and not tokens.is_complex(), f"{what} returned {str(tokens.dtype)[6:]} "
           "values; token ids are integers (int64, as argmax gives them)")
    expect(tokens.shape == want.shape, f"{what} has shape {tuple(tokens.shape)}, expected {tuple(want.shape)} "
           f"(the prompt's {prompt_length} tokens and the new ones)")
    if not torch.equal(tokens.long(), want):
        row = int((tokens.long() != want).any(dim=1).nonzero()[0])
        at = int((tokens[row].long() != want[row]).nonzero()[0])
        raise Fail(f"{what}: sequence {row} goes wrong at token {at}; after the prompt "
                   f"{text(want[row, :prompt_length])!r} the reference writes {text(want[row, prompt_length:])!r}, "
                   f"yours {text(tokens[row, prompt_length:])!r}")


@CHECKS.add("s10.gpt.loads", points=1, probe="s10.gpt.loads",
            title="the kit's trained weights load into GPTModel with strict=True")
def gpt_loads(obs, ctx):
    result = get(obs)
    # Names inside the attention are stage 4's contract, priced there (s4.mha.structure): not again here.
    missing, unexpected, misshapen = (outside_attention(result[k]) for k in ("missing", "unexpected", "misshapen"))
    problems = ([f"your model has no {', '.join(missing[:3])}"] if missing else []) + (
        [f"your model has {', '.join(unexpected[:3])}, which the weights do not name"] if unexpected else []) + (
        [f"your {', '.join(misshapen[:3])} {'has' if len(misshapen) == 1 else 'have'} another shape than the "
         "weights'"] if misshapen else [])
    expect(not problems, "GPTModel(cfg).load_state_dict(trained weights, strict=True) failed: " + "; ".join(problems))
    if result["message"]:
        return "only the parameters inside your attention differ from the weights' (stage 4 judges them); the rest load"


@CHECKS.add("s10.gpt.trained", points=4, probe="s10.gpt.trained", devices=NUMERIC,
            title="with the trained weights, GPTModel gives the reference's logits and continues held-out text as "
                  "it does", end_to_end=True, twin="s10.gpt.trained.twin")
def gpt_trained(obs, ctx):
    def judge(o):
        expect_close(get(o, "logits"), ctx.golden["logits"], "the trained model's logits for 3 held-out prompts of 40 "
                     "characters", atol=1e-3, rtol=1e-3, dtype=torch.float32)
        expect_tokens(get(o, "tokens"), ctx.golden["tokens"], "greedy text from the trained model (the kit's loop)",
                      PROMPTS.shape[1])

    naming_the_part(obs, ctx, judge, *ATTENTION)


@CHECKS.add("s10.gpt.writes", points=2, probe="s10.gpt.writes", devices=NUMERIC,
            title="end to end: your generate_greedy and generate_cached write the reference's text with the trained "
                  "weights", end_to_end=True, twin="s10.gpt.writes.twin")
def gpt_writes(obs, ctx):
    for key, call, attention in (("greedy", "generate_greedy(GPTModel", ATTENTION),
                                 ("cached", "generate_cached(CachedGPTModel", CACHED_ATTENTION)):
        naming_the_part(obs, ctx, lambda o, key=key, call=call: expect_tokens(
            get(o, key), ctx.golden["greedy"], f"{call} with the trained weights, ...)", PROMPTS.shape[1]), *attention)


@CHECKS.add("s10.cached.model", points=3, probe="s10.cached.model", devices=NUMERIC,
            title="CachedGPTModel fed in pieces with its caches gives the full model's logits; each cache grows by "
                  "the tokens fed", end_to_end=True, twin="s10.cached.model.twin")
def cached_model(obs, ctx):
    def judge(o):
        judge_pieces(get(o, "model"), ctx.golden["model"], "CachedGPTModel")
        one_block = "CachedGPTModel with one block (n_layers=1)"
        try:
            result = get(o, "one_block")
        except Fail as failed:  # the error alone would not say that the model had a single block
            raise Fail(f"{one_block}: {failed}") from None
        judge_pieces(result, ctx.golden["one_block"], one_block)

    naming_the_part(obs, ctx, judge, *CACHED_ATTENTION)


def judge_pieces(result, golden, model):
    """One run of the cached model fed in ``PIECES``: the caches' lengths, then the logits."""
    held, logits = result["held"], result["logits"]
    fed = 0
    for n, kept in zip(PIECES, held):
        fed += n
        expect(all(k == fed for k in kept), f"{model} after {fed} tokens (fed in pieces of {list(PIECES)}) "
               f"returned caches holding {kept} tokens per block; each should hold {fed}: a block's cache is its "
               "attention's (keys, values), (batch, heads, tokens so far, head_dim)")
    first = PIECES[0]
    want = golden["logits"]
    expect(logits.shape == want.shape, f"the logits of {model} fed in pieces have shape {tuple(logits.shape)}, "
           f"expected {tuple(want.shape)}")
    if (close(logits[:, :first], want[:, :first], atol=1e-3, rtol=1e-3)
            and not close(logits, want, atol=1e-3, rtol=1e-3)):
        raise Fail(f"{model}: the logits of the first {first} tokens (no cache yet) are right, those of the tokens "
                   "fed with the caches are not. A token fed after `past` cached ones sits at position past + t: "
                   "its position embedding too (torch.arange(past, past + n)); and each block needs its own cache")
    expect_close(logits, want, f"{model}'s logits, fed in pieces with the caches", atol=1e-3, rtol=1e-3,
                 dtype=torch.float32)


# ---------------------------------------------------------------- the loops, on the kit's stand-ins

def rule_tokens():
    """What greedy generation gives with the stand-in model (``probes.stage10.Rule``)."""
    rows = []
    for row in RULE_PROMPT.tolist():
        for _ in range(RULE_NEW):
            row.append(rule_next(row[-RULE_CONTEXT:]))
        rows.append(row)
    return torch.tensor(rows)


def cached_calls():
    """The calls a cached loop makes, per the contract: (tokens fed, tokens cached before)."""
    calls, cached, total = [], 0, RULE_PROMPT.shape[1]
    for _ in range(RULE_NEW):
        fed = min(total, RULE_CONTEXT) if cached == 0 else 1
        calls.append((fed, cached))
        cached = cached + fed
        total += 1
        if cached >= RULE_CONTEXT:
            cached = 0
    return calls


def expect_loop(obs, name, training, how):
    """What every loop owes: the prompt untouched, integer token ids, no autograd, the mode kept. The ids
    are ``idx``'s dtype or int64: the contract asks for integers, since the book's ``generate_text_simple``
    returns int64 for an int32 ``idx`` (``torch.cat`` promotes) and the reference keeps ``idx``'s."""
    expect(torch.equal(obs["prompt_after"].long(), RULE_PROMPT), f"{name} changed the prompt idx in place; return a "
           "new tensor")
    expect(obs["training"] == training, f"{name} left the model in {'train' if obs['training'] else 'eval'} mode; it "
           f"found it in {'train' if training else 'eval'} mode, and should leave it so")
    expect(not any(c["grad"] for c in obs["calls"]), f"{name} ran the model with autograd on; generating needs no "
           "gradients: call the model under torch.no_grad()")
    expect_tokens(obs["tokens"], rule_tokens(), f"{name} with the kit's stand-in model (a context of {RULE_CONTEXT})"
                  f"{how}", RULE_PROMPT.shape[1])


@CHECKS.add("s10.generate.greedy", points=2, probe="s10.generate",
            title="generate_greedy crops to the context, takes the last position's argmax, runs without autograd")
def generate_greedy(obs, ctx):
    for key, training, how in (("greedy", False, ", an int64 prompt"), ("greedy_train", True, " in train mode"),
                               ("greedy_int32", False, ", an int32 prompt")):
        result = get(obs, key)
        fed = [c["fed"] for c in result["calls"]]
        expect(len(fed) == RULE_NEW, f"generate_greedy called the model {len(fed)} times for {RULE_NEW} new tokens; "
               "once per token")
        expect_loop(result, "generate_greedy", training, how)


@CHECKS.add("s10.cached.generate", points=2, probe="s10.generate",
            title="generate_cached gives generate_greedy's tokens, feeding one new token per step with the caches")
def generate_cached(obs, ctx):
    result = get(obs, "cached")
    calls = [(c["fed"], c["past"]) for c in result["calls"]]
    want = cached_calls()
    expect_loop(result, "generate_cached", False, ", an int64 prompt")
    if calls != want:
        at = next(i for i, (a, b) in enumerate(zip(calls + [None] * len(want), want)) if a != b)
        got = calls[at] if at < len(calls) else None
        raise Fail(f"generate_cached's step {at}: " + (
            f"it fed {got[0]} token(s) with {got[1]} cached, expected {want[at][0]} with {want[at][1]} cached"
            if got else "it made fewer calls than steps") + " (the first step feeds the prompt's last context_size "
            "tokens; then one new token per step with the caches; a full cache starts afresh)")
    expect_loop(get(obs, "cached_train"), "generate_cached", True, " in train mode")
    uncached = sum(min(RULE_PROMPT.shape[1] + i, RULE_CONTEXT) for i in range(RULE_NEW))
    return f"it fed the model {sum(f for f, _ in calls)} tokens for {RULE_NEW} new ones; without a cache, {uncached}"


# ---------------------------------------------------------------- training

@CHECKS.add("s10.train.losses", points=2, probe="s10.train",
            title="train_steps: next-token cross-entropy averaged over positions, zeroed gradients, a step each; "
                  "the losses returned")
def train_losses(obs, ctx):
    result = get(obs)
    losses, want = get(result, "losses").double(), ctx.golden["losses"]
    expect(losses.shape == want.shape, f"train_steps(..., steps={TRAIN_STEPS}) returned {losses.numel()} losses; one "
           "per step")
    what = f"the losses of {TRAIN_STEPS} steps of SGD from known weights"
    first, ratio = float(losses[0]), float(losses[0] / want[0])
    tokens = TRAIN_BATCH * TRAIN_TOKENS
    expect(abs(ratio - tokens) > 1e-3 * tokens, f"{what}: your first loss is {first:.4f}, {tokens} times the "
           "reference's: the cross-entropy should be averaged over every position of the batch, not summed")
    expect(abs(ratio - 1) < 1e-4, f"{what}: your first loss is {first:.4f}, the reference's {float(want[0]):.4f}, "
           "before any update: is it the cross-entropy of the logits at every position against the targets "
           "(F.cross_entropy(logits.flatten(0, 1), targets.flatten()))?")
    if bool((losses == losses[0]).all()):
        raise Fail(f"{what}: every step gives the same loss, {first:.4f}: the weights never change; is "
                   "optimizer.step() called after loss.backward()?")
    if not close(losses, want, atol=1e-5, rtol=1e-4):
        step = int((~torch.isclose(losses, want, atol=1e-5, rtol=1e-4)).nonzero()[0])
        raise Fail(f"{what}: the losses agree until step {step}, where yours is {float(losses[step]):.4f} and the "
                   f"reference's {float(want[step]):.4f}: are the gradients zeroed before each backward "
                   "(optimizer.zero_grad()), and does step i use batches[i % len(batches)]?")
    expect_close(result["logits"], ctx.golden["logits"], "the model's logits after training", dtype=torch.float32)


@CHECKS.add("s10.train.mode", points=1, probe="s10.train",
            title="train_steps trains in train mode and leaves the model in eval mode")
def train_mode(obs, ctx):
    result = get(obs)
    modes = result["modes"][:TRAIN_STEPS]
    expect(modes and all(modes), "train_steps ran the model in eval mode while training; call model.train() first "
           "(dropout is part of training)")
    expect(result["after"] is False, "train_steps left the model in train mode; it should leave it in eval mode "
           "(model.eval()), ready to be evaluated or to generate")

def trained_heads(obs) -> list[Picture]:
    """Two heads of the kit's trained model, computed by the student's own attention: the previous-token
    head and the induction head, on a word written twice and a half."""
    weights = observed_tensor(obs, "heads")
    n = len(HEADS_SAMPLE)
    if (weights is None or weights.dim() != 4 or tuple(weights.shape[-2:]) != (n, n)
            or not bool(weights.isfinite().all())):
        return []
    return list(head_pictures(weights, list(HEADS_SAMPLE), period=HEADS_SAMPLE.index(" ") + 1))


CHECKS.pictures(draw={"s10.gpt.trained": trained_heads,
                      "s10.gpt.leak": lambda o: leak_map(o.get("leak") if isinstance(o, dict) else None, "GPTModel")})
