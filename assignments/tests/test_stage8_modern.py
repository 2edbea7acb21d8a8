"""Stage 8 self-checks: attention as current models run it (attention_lab/modern.py).

``GroupedQueryAttention.forward(x, cache)`` returns ``(out, (keys, values))``; keys and values
have shape (batch, num_kv_heads, tokens so far, head_dim): not repeated for the query heads.
Expected values come from PyTorch's ``nn.MultiheadAttention`` holding *your* layers' weights
(key/value heads repeated for their group of query heads), causal, in eval mode, dropout 0.
The speed check times your ``FastMultiHeadAttention`` against the kit's own fast version on
the CPU, as the grader does.
"""
import copy
import inspect
from types import SimpleNamespace

import pytest
import torch
import torch.nn as nn

import speed
from lab_checks import expect, expect_close, expect_linear, expect_raises, expect_shape, fail, run, student, tensor
from oracles import copy_attention, grouped_query

pytestmark = pytest.mark.stage8

DIM, HEADS, KV_HEADS, CONTEXT = 8, 4, 2, 10
HEAD_DIM = DIM // HEADS
GQA = f"GroupedQueryAttention({DIM}, {DIM}, {CONTEXT}, num_heads={HEADS}, num_kv_heads={KV_HEADS}, qkv_bias=True)"


def x(*shape, seed=0):
    return torch.randn(*shape, generator=torch.Generator().manual_seed(seed))


# --- the order of the arguments ----------------------------------------------------------------

# The arguments the checks (and the graders) pass by position. Stage 4's MultiHeadAttention and
# FastMultiHeadAttention take dropout before num_heads; GroupedQueryAttention takes its heads first.
POSITIONAL = {"GroupedQueryAttention": ("d_in", "d_out", "context_length", "num_heads", "num_kv_heads"),
              "FastMultiHeadAttention": ("d_in", "d_out", "context_length", "dropout", "num_heads")}
SIGNATURE = {
    "GroupedQueryAttention": "GroupedQueryAttention(d_in, d_out, context_length, num_heads, num_kv_heads, "
                             "dropout=0.0, qkv_bias=False)",
    "FastMultiHeadAttention": "FastMultiHeadAttention(d_in, d_out, context_length, dropout, num_heads, qkv_bias=False)"}
TRAP = {
    "GroupedQueryAttention": "num_heads and num_kv_heads come before dropout here, unlike stage 4's "
                             "MultiHeadAttention(d_in, d_out, context_length, dropout, num_heads)",
    "FastMultiHeadAttention": "dropout comes before num_heads here, as in stage 4's MultiHeadAttention, "
                              "unlike GroupedQueryAttention(d_in, d_out, context_length, num_heads, num_kv_heads, "
                              "dropout=0.0)"}
# Words of the errors that arguments in the wrong places give: "got multiple values for argument 'dropout'",
# "missing 1 required positional argument", "float modulo" (num_heads = 0.0), "dropout probability has to be
# between 0 and 1", "... must be divisible by num_heads".
ARGUMENT_WORDS = ("argument", "head", "dropout", "probability", "modulo", "divisible", "integer")


def _your_arguments(cls):
    """The names your class's ``__init__`` takes by position (after self), or None when they cannot be read."""
    try:
        parameters = inspect.signature(cls).parameters.values()
    except (TypeError, ValueError):
        return None
    return [p.name for p in parameters if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]


def _order_problem(name, cls):
    """What is wrong with the order of your ``__init__``'s arguments, as far as their names tell; else None."""
    yours = _your_arguments(cls)
    if yours is None:
        return None
    contract = POSITIONAL[name]
    known = contract + ("dropout",)
    swapped = [(mine, theirs) for mine, theirs in zip(yours, contract) if mine != theirs and mine in known]
    if not swapped:
        return None
    mine, theirs = swapped[0]
    return (f"your {name} takes ({', '.join(yours)}), but the contract is {SIGNATURE[name]}; the checks pass the "
            f"first five by position, as the graders do, so your {mine} would get the value meant for {theirs}: "
            f"{TRAP[name]}")


def _order_hint(name, cls):
    """For ``run``: a reminder of the order of the arguments when ``cls(...)`` raised an error about them and
    the names of your arguments do not show that their order is right."""
    def hint(exc):
        yours = _your_arguments(cls)
        if yours is not None and all(n in yours for n in POSITIONAL[name]):
            return None  # in the contract's order (else _build had failed): the error is elsewhere
        if not isinstance(exc, (TypeError, ValueError, ZeroDivisionError)):
            return None
        if not any(word in str(exc).lower() for word in ARGUMENT_WORDS):
            return None
        return (f"(check the order of the arguments: the checks call {SIGNATURE[name]}, the first five by "
                f"position; {TRAP[name]})")
    return hint


def _build(name, *args, **kwargs):
    """Your ``modern.<name>(*args, **kwargs)``: a failure names an order of the arguments unlike the contract's."""
    cls = getattr(student("modern"), name)
    shown = ", ".join([repr(a) for a in args] + [f"{k}={v!r}" for k, v in kwargs.items()])
    problem = _order_problem(name, cls)
    expect(problem is None, f"{name}({shown}): {problem}")
    return run(cls, *args, hint=_order_hint(name, cls), **kwargs)


def _expect_build_raises(error, name, *args, what, because):
    """``expect_raises`` for your ``modern.<name>(*args)``, with the same care for the order of the arguments."""
    cls = getattr(student("modern"), name)
    problem = _order_problem(name, cls)
    expect(problem is None, f"{what}: {problem}")
    expect_raises(error, cls, *args, what=what, because=because, hint=_order_hint(name, cls))


# --- your layers, checked --------------------------------------------------------------------

def _kv_linear(layer, d_in, d_out, heads, kv_heads, bias, what):
    """A key or value layer: ``nn.Linear(d_in, kv_heads * head_dim)``, with the reason when its width is off."""
    kv = kv_heads * (d_out // heads)
    if isinstance(layer, nn.Linear) and layer.out_features != kv:
        heads_word = "head" if kv_heads == 1 else "heads"
        fail(f"{what} is nn.Linear({layer.in_features}, {layer.out_features}), expected nn.Linear({d_in}, {kv}, "
             f"bias={bias}): {kv_heads} key/value {heads_word} of head_dim = {d_out} // {heads} = {d_out // heads} "
             "dimensions each")
    return expect_linear(layer, d_in, kv, what, bias=bias)


def _gqa(heads=HEADS, kv_heads=KV_HEADS, bias=True, d=DIM, dropout=0.0):
    """Your GroupedQueryAttention(d, d, CONTEXT, heads, kv_heads), in eval mode, and its four layers checked."""
    module = _build("GroupedQueryAttention", d, d, CONTEXT, heads, kv_heads, dropout=dropout, qkv_bias=bias)
    module.eval()
    call = f"GroupedQueryAttention({d}, {d}, {CONTEXT}, num_heads={heads}, num_kv_heads={kv_heads}, qkv_bias={bias})"
    layers = [expect_linear(getattr(module, "W_query", None), d, d, f"{call}.W_query", bias=bias),
              _kv_linear(getattr(module, "W_key", None), d, d, heads, kv_heads, bias, f"{call}.W_key"),
              _kv_linear(getattr(module, "W_value", None), d, d, heads, kv_heads, bias, f"{call}.W_value"),
              expect_linear(getattr(module, "out_proj", None), d, d, f"{call}.out_proj")]
    return module, layers, call


def _step(module, inputs, cache, call):
    """``module(inputs, cache)``: ``out``, the returned cache's ``(keys, values)`` as tensors to check, and the
    returned cache itself, as it is, to pass to the next call."""
    result = run(module, inputs, cache)
    expect(isinstance(result, (tuple, list)) and len(result) == 2,
           f"{call} returned a {type(result).__name__}; forward(x, cache) should return a pair (out, cache)")
    out, new_cache = result
    expect(isinstance(new_cache, (tuple, list)) and len(new_cache) == 2,
           f"{call} returned a cache of type {type(new_cache).__name__}; it should be a pair (keys, values)")
    return tensor(out, f"the out of {call}"), tuple(tensor(t, f"the cache's {name} from {call}")
                                                    for name, t in zip(("keys", "values"), new_cache)), new_cache


def _decode(module, inputs, pieces, call):
    """Feeds ``inputs`` in pieces of ``pieces`` tokens, each with the cache of the pieces before it; checks the
    shapes of every out and cache, and returns the outs put together and the last cache."""
    outs, kept, start = [], None, 0
    batch = inputs.shape[0]
    for n in pieces:
        step = f"{call} on tokens {start}..{start + n - 1} (x of shape ({batch}, {n}, {DIM})) with " + (
            "cache=None" if kept is None else f"the cache of tokens 0..{start - 1}")
        out, cache, kept = _step(module, inputs[:, start:start + n], kept, step)
        expect_shape(out, (batch, n, DIM), f"the out of {step}")
        want = (batch, KV_HEADS, start + n, HEAD_DIM)
        for name, t in zip(("keys", "values"), cache):
            got = tuple(t.shape)
            if got[1:2] == (HEADS,):
                hint = (f"; {HEADS} heads means the {name} were repeated before caching: cache the {KV_HEADS} "
                        "key/value heads and repeat them (repeat_kv) only for the scores")
            elif len(got) == 4 and got[2] > start + n:
                hint = (f"; {got[2]} tokens is more than the {start + n} seen so far in this sequence: are the new "
                        f"{name} added twice, or kept on self from an earlier call? cache=None starts a new sequence")
            else:
                hint = "; put the cached ones in front of the new ones with torch.cat(..., dim=2)"
            expect(got == want, f"{step}: the returned cache's {name} have shape {got}, expected {want} "
                   f"(batch, num_kv_heads, tokens so far, head_dim){hint}")
        outs.append(out)
        start += n
    return torch.cat(outs, dim=1), cache


def _tiled(projection, num_heads, num_kv_heads):
    """A key or value projection widened the wrong way: heads tiled 0, 1, 0, 1 (what ``t.repeat`` gives)."""
    groups = num_heads // num_kv_heads

    def widen(t):
        return None if t is None else t.unflatten(0, (num_kv_heads, -1)).repeat(groups, *[1] * t.dim()).flatten(0, 1)

    return SimpleNamespace(weight=widen(projection.weight), bias=widen(projection.bias))


def _expected_at_every_position(out, expected, how, first_piece, hint=""):
    """``out`` against the full causal forward, at the first position where they differ."""
    wrong = ~torch.isfinite(out) | ((out - expected).abs() > 1e-5 + 1e-4 * expected.abs())
    late = wrong.any(dim=2).any(dim=0).nonzero()
    if not len(late):
        return
    t = late[0].item()
    if t < first_piece:
        hint = (f"(tokens 0..{first_piece - 1} came in the first call, with cache=None: no cache is involved yet; "
                "see first the checks of the output without a cache)")
    expect_close(out[:, :t + 1], expected[:, :t + 1], "out", setup=(
        f"{GQA}, eval mode, fed {how}; out = the outs of the calls put together, of shape {tuple(out.shape)}; "
        f"expected at position {t}: the full causal forward over tokens 0..{t}, as nn.MultiheadAttention computes "
        f"it with your weights (key/value heads repeated)" + (f"\n{hint}" if hint else "")))


# --- grouped-query attention ------------------------------------------------------------------

def test_repeat_kv_repeats_each_key_value_head_for_its_group_in_order():
    modern = student("modern")
    t = x(2, 3, 4, 5, seed=1)  # (batch, num_kv_heads=3, seq, head_dim)
    for groups in (1, 2, 4):
        call = f"repeat_kv(t, {groups}) for t of shape (2, 3, 4, 5)"
        out = tensor(run(modern.repeat_kv, t, groups), call)
        expect_shape(out, (2, 3 * groups, 4, 5), call)
        for head in range(3 * groups):
            if not torch.equal(out[:, head], t[:, head // groups]):
                tiled = torch.equal(out, t.repeat(1, groups, 1, 1))
                fail(f"{call}: head {head} should be a copy of key/value head {head // groups} (the heads come out "
                     "grouped 0, 0, 1, 1, 2, 2 for groups=2)" + (
                         ", but they come out tiled 0, 1, 2, 0, 1, 2 as t.repeat gives; t.repeat_interleave(groups, "
                         "dim=1) groups them" if tiled else ""))


def test_key_and_value_projections_have_num_kv_heads_times_head_dim_outputs():
    for d_in, d_out, heads, kv_heads, bias in ((16, 16, 4, 2, False), (16, 16, 4, 1, True), (6, 12, 6, 3, True)):
        module = _build("GroupedQueryAttention", d_in, d_out, CONTEXT, heads, kv_heads, qkv_bias=bias)
        call = f"GroupedQueryAttention({d_in}, {d_out}, {CONTEXT}, num_heads={heads}, num_kv_heads={kv_heads}, " \
               f"qkv_bias={bias})"
        expect_linear(getattr(module, "W_query", None), d_in, d_out, f"{call}.W_query", bias=bias)
        for name in ("W_key", "W_value"):
            _kv_linear(getattr(module, name, None), d_in, d_out, heads, kv_heads, bias, f"{call}.{name}")
        expect_linear(getattr(module, "out_proj", None), d_out, d_out, f"{call}.out_proj")
        extra = sorted(n for n, _ in module.named_parameters() if n.split(".")[0] not in
                       ("W_query", "W_key", "W_value", "out_proj"))
        expect(not extra, f"{call} has parameters besides W_query, W_key, W_value, out_proj: {', '.join(extra)}")


def test_as_many_key_value_heads_as_heads_is_nn_multihead_attention():
    inputs = x(2, 6, DIM, seed=2)
    for heads, bias in ((2, False), (4, True)):
        module, layers, call = _gqa(heads, heads, bias)
        out, _, _ = _step(module, inputs, None, call)
        expect_close(out, grouped_query(layers, heads, heads, inputs), "out", setup=(
            f"out, cache = {call}(x, None), eval mode, x of shape (2, 6, {DIM}); expected: nn.MultiheadAttention("
            f"{DIM}, {heads}, batch_first=True) holding your W_query, W_key, W_value, out_proj, with a causal mask\n"
            f"(with num_kv_heads == num_heads it is stage 4's MultiHeadAttention: head_dim = {DIM // heads}, scores "
            "scaled by 1/sqrt(head_dim), -inf above the diagonal)"))


def test_mqa_and_gqa_equal_nn_multihead_attention_with_key_value_heads_repeated():
    inputs = x(2, 7, DIM, seed=3)
    for heads, kv_heads, bias in ((4, 1, False), (4, 2, False), (4, 2, True)):
        module, layers, call = _gqa(heads, kv_heads, bias)
        out, _, _ = _step(module, inputs, None, call)
        expect_shape(out, (2, 7, DIM), f"the out of {call}(x, None) for x of shape (2, 7, {DIM})")
        expected = grouped_query(layers, heads, kv_heads, inputs)
        g = heads // kv_heads
        setup = (f"out, cache = {call}(x, None), eval mode, x of shape (2, 7, {DIM}); expected: nn.MultiheadAttention("
                 f"{DIM}, {heads}, batch_first=True), causal, holding your layers with key/value head j repeated for "
                 f"query heads {g}*j to {g}*j+{g - 1}")
        query, key, value, output = layers
        tiled = grouped_query([query, _tiled(key, heads, kv_heads), _tiled(value, heads, kv_heads), output], heads,
                              heads, inputs)
        if kv_heads > 1 and torch.allclose(out, tiled, atol=1e-5, rtol=1e-4) and not torch.allclose(out, expected):
            fail(f"{setup}\nout is what key/value heads tiled 0, 1, 0, 1 give: query heads 0 and 1 share key/value "
                 "head 0, so repeat each head in a row (repeat_kv: t.repeat_interleave), not the whole stack "
                 "(t.repeat)")
        expect_close(out, expected, "out", setup=setup)


def test_heads_that_do_not_divide_raise_value_error():
    _expect_build_raises(ValueError, "GroupedQueryAttention", DIM, 6, CONTEXT, 4, 2,
                         what=f"GroupedQueryAttention({DIM}, 6, {CONTEXT}, num_heads=4, num_kv_heads=2)",
                         because=" (d_out 6 is not divisible by 4 heads)")
    _expect_build_raises(ValueError, "GroupedQueryAttention", DIM, DIM, CONTEXT, 4, 3,
                         what=f"GroupedQueryAttention({DIM}, {DIM}, {CONTEXT}, num_heads=4, num_kv_heads=3)",
                         because=" (4 query heads cannot be shared out among 3 key/value heads)")
    _expect_build_raises(ValueError, "FastMultiHeadAttention", 4, 6, CONTEXT, 0.0, 4,
                         what=f"FastMultiHeadAttention(4, 6, {CONTEXT}, 0.0, num_heads=4)",
                         because=" (d_out 6 is not divisible by 4 heads)")


# --- the KV cache -----------------------------------------------------------------------------

def test_decoding_one_token_at_a_time_with_the_cache_equals_the_full_forward():
    module, layers, call = _gqa()
    inputs = x(2, 7, DIM, seed=4)
    out, (keys, values) = _decode(module, inputs, (1,) * 7, call)
    _expected_at_every_position(out, grouped_query(layers, HEADS, KV_HEADS, inputs),
                                "one token at a time, each with the cache returned for the tokens before it", 1,
                                hint="(the new token sits at position past: it uses row past of the causal mask and "
                                     "sees all past+1 keys)")
    for name, layer, cached in (("keys", layers[1], keys), ("values", layers[2], values)):
        with torch.no_grad():
            want = layer(inputs).view(2, 7, KV_HEADS, HEAD_DIM).transpose(1, 2)
        expect_close(cached, want, f"the cache's {name}", setup=(
            f"{call} fed 7 tokens one at a time: the cache's {name} after the last token should be "
            f"{'W_key' if name == 'keys' else 'W_value'}(x) split into {KV_HEADS} key/value heads, "
            f"shape (2, {KV_HEADS}, 7, {HEAD_DIM}), the oldest token first"))


def test_feeding_pieces_of_3_then_2_then_1_tokens_with_the_cache_equals_the_full_forward():
    module, layers, call = _gqa()
    inputs = x(2, 6, DIM, seed=5)
    out, _ = _decode(module, inputs, (3, 2, 1), call)
    _expected_at_every_position(out, grouped_query(layers, HEADS, KV_HEADS, inputs), (
        "in pieces of 3, 2 and 1 tokens, each with the cache of the pieces before it"), 3, hint=(
        "(the n new queries sit at positions past..past+n-1: they use rows past..past+n-1 of the causal mask and "
        "see all past+n keys, each up to itself)"))


def test_cache_none_starts_a_new_sequence_and_the_module_keeps_no_state():
    module, layers, call = _gqa()
    fresh = run(copy.deepcopy, module, what=f"copy.deepcopy({call})")
    first, second = x(2, 5, DIM, seed=6), x(2, 5, DIM, seed=7)
    _decode(module, first, (1,) * 5, call)
    out, _ = _decode(module, second, (2, 1, 1, 1), call)
    how = ("a first sequence of 5 tokens one at a time, then a second sequence from cache=None again (2 tokens, "
           "then one at a time)")
    expect_close(out, _decode(fresh, second, (2, 1, 1, 1), call)[0], "out", setup=(
        f"{GQA}, eval mode, fed {how}; expected: the outs of an untouched copy of the module fed only the second "
        "sequence\n(the second sequence must not see the first: keep nothing on self between calls, the cache "
        "comes in as an argument and goes out as a return value)"))
    _expected_at_every_position(out, grouped_query(layers, HEADS, KV_HEADS, second), how, 2)


def test_a_cache_that_would_grow_past_context_length_raises_value_error():
    module, _, call = _gqa()
    _, _, cache = _step(module, x(2, 6, DIM, seed=8), None, f"{call} on x of shape (2, 6, {DIM})")
    expect_raises(ValueError, module, x(2, 5, DIM, seed=9), cache,
                  what=f"{call}(x, cache) with x of 5 new tokens after a cache of 6",
                  because=f" (6 + 5 = 11 tokens exceed context_length {CONTEXT})")


# --- fast attention -----------------------------------------------------------------------------

def _fast(heads, bias, dropout=0.0):
    """Your FastMultiHeadAttention(DIM, DIM, CONTEXT, dropout, heads), in eval mode, and nn.MultiheadAttention
    holding its weights: the row blocks of qkv as queries, keys, values, and out_proj."""
    module = _build("FastMultiHeadAttention", DIM, DIM, CONTEXT, dropout, heads, qkv_bias=bias)
    module.eval()
    call = f"FastMultiHeadAttention({DIM}, {DIM}, {CONTEXT}, {dropout}, num_heads={heads}, qkv_bias={bias})"
    qkv = expect_linear(getattr(module, "qkv", None), DIM, 3 * DIM, f"{call}.qkv", bias=bias)
    out_proj = expect_linear(getattr(module, "out_proj", None), DIM, DIM, f"{call}.out_proj")
    blocks = [SimpleNamespace(weight=w, bias=b) for w, b in
              zip(qkv.weight.detach().chunk(3), [None] * 3 if qkv.bias is None else qkv.bias.detach().chunk(3))]
    pytorch = copy_attention(nn.MultiheadAttention(DIM, heads, batch_first=True), blocks + [out_proj]).eval()
    return module, pytorch, call


def _causal_mha(pytorch, inputs):
    n = inputs.shape[1]
    with torch.no_grad():
        return pytorch(inputs, inputs, inputs, attn_mask=torch.ones(n, n, dtype=torch.bool).triu(1),
                       need_weights=False)[0]


def test_fast_attention_with_one_fused_qkv_equals_nn_multihead_attention():
    for heads, bias, shape in ((2, False, (2, 6, DIM)), (4, True, (3, CONTEXT, DIM)), (1, False, (1, 1, DIM))):
        module, pytorch, call = _fast(heads, bias)
        inputs = x(*shape, seed=10)
        out = tensor(run(module, inputs), f"the out of {call}")
        expect_shape(out, shape, f"{call} on x of shape {shape}")
        expect_close(out, _causal_mha(pytorch, inputs), "out", setup=(
            f"out = {call}(x), eval mode, x of shape {shape}; expected: nn.MultiheadAttention({DIM}, {heads}, "
            "batch_first=True) with a causal mask, holding qkv.weight's three row blocks as W_query, W_key, W_value "
            "and your out_proj\n(view the output of qkv as (b, n, 3, num_heads, head_dim), then permute to "
            "(3, b, num_heads, n, head_dim): queries, keys, values in that order; call "
            "F.scaled_dot_product_attention with is_causal=True)"))


def test_fast_attention_dropout_is_off_in_eval_mode_only():
    module, _, call = _fast(2, False, dropout=0.5)
    twin, _, twin_call = _fast(2, False, dropout=0.0)
    with torch.no_grad():
        for name, parameter in module.named_parameters():
            twin.get_parameter(name).copy_(parameter)
    inputs = x(2, CONTEXT, DIM, seed=11)
    hint = ("F.scaled_dot_product_attention applies dropout_p whenever it is nonzero: pass "
            "dropout_p=self.dropout if self.training else 0.0 (or however you stored it)")
    torch.manual_seed(1)
    first = tensor(run(module, inputs), f"the out of {call} in eval mode")
    torch.manual_seed(2)
    expect_close(run(module, inputs), first, "second out", setup=(
        f"{call} in eval mode, called twice on the same x: dropout must be off after .eval(), so the second out "
        f"equals the first; {hint}"))
    expect_close(first, run(twin, inputs), "out", setup=(
        f"{call} in eval mode, against {twin_call} holding the same weights: with dropout off in eval mode the "
        f"two give the same out; {hint}"))
    module.train()
    torch.manual_seed(3)
    trained = tensor(run(module, inputs), f"the out of {call} in train mode")
    expect(not torch.allclose(trained, first), f"{call} gives the same output in train mode as in eval mode: pass "
           "the dropout probability to F.scaled_dot_product_attention as dropout_p in training mode")


def test_speed_of_fast_attention_is_at_most_1_2_times_the_kits_on_a_long_sequence():
    width, tokens, heads = speed.SIZE["width"], speed.SIZE["tokens"], speed.SIZE["heads"]
    module = _build("FastMultiHeadAttention", width, width, tokens, 0.0, heads)
    call = f"FastMultiHeadAttention({width}, {width}, {tokens}, 0.0, num_heads={heads})"
    expect_linear(getattr(module, "qkv", None), width, 3 * width, f"{call}.qkv", bias=False)
    expect_linear(getattr(module, "out_proj", None), width, width, f"{call}.out_proj")
    with torch.no_grad():
        for name, value in speed.weights().items():  # qkv.weight, out_proj.weight, out_proj.bias
            module.get_parameter(name).copy_(value)
    module.eval()

    def race():
        try:
            return speed.race(module), None
        except speed.Unfit as exc:
            return None, str(exc)

    report, unfit = run(race, what=f"{call}.forward while being timed")
    expect(unfit is None, f"{call}, timed on x of shape ({speed.SIZE['batch']}, {tokens}, {width}): {unfit}")
    passed, text = speed.verdict(report)
    expect(passed, text)
