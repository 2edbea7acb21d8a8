"""Stage 8 probes: grouped-query attention, the KV cache, fast attention and its speed.

Library attention is allowed in this stage, so every probe here runs without the guard that
refuses it (which would also slow PyTorch's fused kernels down and spoil the timing).
"""
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.overrides import TorchFunctionMode

from ..public import speed
from ..public.feedback import is_error_record, problem
from .common import (DROPOUT_P, DROPOUT_TOKENS, ProbeError, Probes, dropout_report, dropout_weights,
                     eval_report, forward, gradient_report, leak_report, linear_weights, load_by_name, plain, raised,
                     randn, shape_reports)
from .stage4 import MHA_SHAPES, known_input, mha_weights

PROBES = Probes(library_attention=True)  # every probe of this stage may call library attention


DIM, HEADS, KV_HEADS, CONTEXT = 8, 4, 2, 10
HEAD_DIM = DIM // HEADS
X = randn(2, 7, DIM, seed=80)
Y = randn(2, 7, DIM, seed=81)  # a second sequence, decoded after a reset
GROUPED = {"mqa": (4, 1, False), "gqa": (4, 2, False), "gqa_bias": (4, 2, True)}  # heads, kv heads, qkv_bias
PIECES = (3, 2, 1, 1)  # the chunks of X fed with a cache: a prefill of 3, then 2, then single tokens


# ---------------------------------------------------------------- grouped-query attention

def gqa_weights(heads, kv_heads, bias, d_in=DIM, d_out=DIM, seed=800, prefix=""):
    kv_width = kv_heads * (d_out // heads)
    weights = linear_weights(prefix + "W_query", d_in, d_out, seed, bias)
    weights.update(linear_weights(prefix + "W_key", d_in, kv_width, seed + 10, bias))
    weights.update(linear_weights(prefix + "W_value", d_in, kv_width, seed + 20, bias))
    weights.update(linear_weights(prefix + "out_proj", d_out, d_out, seed + 30, bias=True))
    return weights


def gqa(lab, d_in=DIM, d_out=DIM, context=CONTEXT, heads=HEADS, kv_heads=KV_HEADS, dropout=0.0, bias=False):
    return lab.modern.GroupedQueryAttention(d_in, d_out, context, heads, kv_heads, dropout=dropout, qkv_bias=bias)


def split(result, what="GroupedQueryAttention.forward"):
    """``(out, cache)`` from what forward returned, with the cache as two plain tensors."""
    if not isinstance(result, (tuple, list)) or len(result) != 2:
        raise ProbeError(f"{what} should return a pair (out, cache), but returned a {type(result).__name__}")
    out, cache = result
    if not isinstance(cache, (tuple, list)) or len(cache) != 2:
        raise ProbeError(f"{what} returned a cache of type {type(cache).__name__}; "
                         "it should be a pair (keys, values)")
    for name, t in zip(("keys", "values"), cache):
        if type(t) is not torch.Tensor:
            raise ProbeError(f"{what} returned a cache whose {name} are a {type(t).__name__}; they should be a plain "
                             "torch.Tensor")
    return out, cache


class Output(nn.Module):
    """The output alone of a layer that returns ``(out, cache)``: what the measurements shared
    with earlier stages (shapes, leaks, dropout) expect of a forward. ``unpack`` takes the pair apart
    (``split`` by default: a cache of keys and values, named after the inner layer's class)."""

    WRAPS = "inner"  # the student's layer: what feedback names (``common.load_by_name``)

    def __init__(self, inner, unpack=None):
        super().__init__()
        self.inner = inner
        self.unpack = unpack

    def forward(self, x):
        result = self.inner(x)
        if self.unpack is not None:
            return self.unpack(result)[0]
        return split(result, f"{type(self.inner).__name__}.forward")[0]


def _outputs(module, x, device):
    return forward(Output(module).to(device).eval(), x.to(device))


KV = randn(2, 3, 4, 5, seed=82)  # (batch, kv_heads, seq, head_dim): what repeat_kv is given


@PROBES.add("s8.repeat_kv")
def repeat_kv(lab, device):
    def run(groups):
        return plain(lab.modern.repeat_kv(KV.to(device).clone(), groups), f"repeat_kv(t, {groups})")

    return {"groups2": lab.attempt(run, 2), "groups1": lab.attempt(run, 1), "groups4": lab.attempt(run, 4)}


@PROBES.add("s8.gqa.as_mha")
def gqa_as_mha(lab, device):
    """num_kv_heads == num_heads, with stage 4's known weights: must give stage 4's outputs."""
    def run(heads, d_out, bias):
        module = load_by_name(gqa(lab, d_out, d_out, 8, heads, heads, bias=bias), mha_weights(d_out, bias),
                              spare_biases=True)
        return _outputs(module, known_input(d_out), device)

    return {"heads2": lab.attempt(run, 2, 4, False), "heads3_bias": lab.attempt(run, 3, 6, True),
            "heads4": lab.attempt(run, 4, 8, False)}


@PROBES.add("s8.gqa.grouped")
def gqa_grouped(lab, device):
    def run(heads, kv_heads, bias):
        module = load_by_name(gqa(lab, heads=heads, kv_heads=kv_heads, bias=bias), gqa_weights(heads, kv_heads, bias),
                              spare_biases=True)
        return _outputs(module, X, device)

    return {case: lab.attempt(run, *config) for case, config in GROUPED.items()}


GQA_SHAPES = [
    {"name": "MQA: 4 heads, 1 key/value head, batch 1", "x": (1, 6, DIM), "heads": 4, "kv": 1, "d_out": 8,
     "dtypes": True},
    {"name": "GQA: 6 heads, 3 key/value heads, d_in 5, d_out 12", "x": (3, 5, 5), "d_in": 5, "heads": 6, "kv": 3,
     "d_out": 12},
    {"name": "MHA: 2 heads, 2 key/value heads, 4 of 10 tokens", "x": (2, 4, DIM), "heads": 2, "kv": 2, "d_out": DIM},
]


@PROBES.add("s8.gqa.shapes")
def gqa_shapes(lab, device):
    def build(cfg):
        return Output(gqa(lab, cfg.get("d_in", DIM), cfg["d_out"], CONTEXT, cfg["heads"], cfg["kv"]))

    return {"reports": shape_reports(lab, build, GQA_SHAPES, device)}


PARAMETER_CONFIGS = {  # d_in, d_out, num_heads, num_kv_heads, qkv_bias
    "gqa": (768, 768, 12, 4, False),
    "mqa": (768, 768, 12, 1, False),
    "mha_bias": (96, 96, 6, 6, True),  # square, as every probe of this stage but s8.gqa.shapes' d_in != d_out
}


@PROBES.add("s8.gqa.parameters")
def gqa_parameters(lab, device):
    def run(d_in, d_out, heads, kv_heads, bias):
        module = gqa(lab, d_in, d_out, 16, heads, kv_heads, bias=bias)
        return {name: list(p.shape) for name, p in module.named_parameters()}

    return {case: lab.attempt(run, *config) for case, config in PARAMETER_CONFIGS.items()}


@PROBES.add("s8.gqa.divisibility")
def gqa_divisibility(lab, device):
    return {"heads": lab.attempt(raised, lambda: gqa(lab, d_out=6, heads=4, kv_heads=2)),
            "kv_heads": lab.attempt(raised, lambda: gqa(lab, heads=4, kv_heads=3))}


@PROBES.add("s8.gqa.leak")
def gqa_leak(lab, device):
    # A context one longer than the input, here and in the dropout probe: the exact edge is
    # s8.cache.context_limit's to judge, so a check about something else does not fail for it.
    return lab.attempt(lambda: leak_report(Output(gqa(lab, context=8)), DIM, 7, device))


def shown_weights(T=DROPOUT_TOKENS, square=False):
    """``dropout_weights`` for a layer with an ``out_proj`` (identity), T tokens to T + 1 outputs
    (``square``: T + 1 wide in and out, the extra input column 0)."""
    weights = dropout_weights(T, square=square)
    weights.update({"out_proj.weight": torch.eye(T + 1), "out_proj.bias": torch.zeros(T + 1)})
    return weights


@PROBES.add("s8.gqa.dropout")
def gqa_dropout(lab, device):
    T = DROPOUT_TOKENS

    def run():
        module = gqa(lab, T + 1, T + 1, T + 1, 1, 1, dropout=DROPOUT_P)
        return dropout_report(Output(load_by_name(module, shown_weights(T, square=True), spare_biases=True)),
                              device, width=T + 1)

    return {"out": lab.attempt(run)}


@PROBES.add("s8.gqa.eval")
def gqa_eval(lab, device):
    weights = gqa_weights(2, 1, False, d_in=4, d_out=4, seed=840, prefix="inner.")
    return lab.attempt(eval_report, lambda p: Output(gqa(lab, 4, 4, 8, 2, 1, dropout=p)), weights, device, d_in=4,
                       spare_biases=True)


# ---------------------------------------------------------------- the KV cache

def decode(module, x, pieces, device, what):
    """Feed ``x`` in pieces, each with the cache of the one before: the outputs, and the cache's
    shape after every piece. A cache that does not hold the tokens fed so far ends it, with the
    reason (the next call would fail or mislead for a reason the student cannot see)."""
    outs, shapes, cache, start = [], [], None, 0
    for n in pieces:
        out, cache = split(module(x[:, start:start + n].to(device).clone(), cache))
        outs.append(plain(out, "the output of forward with a cache"))
        shapes.append([list(cache[0].shape), list(cache[1].shape)])
        start += n
        held = {t.shape[2] if t.dim() == 4 else None for t in cache}
        if held != {start}:
            raise ProbeError(
                f"{what}: after {start} token{'s' if start > 1 else ''} the cache's keys and values have shapes "
                f"{tuple(cache[0].shape)} and {tuple(cache[1].shape)}; they should hold {start} token"
                f"{'s' if start > 1 else ''} in dimension 2, (batch, num_kv_heads, tokens so far, head_dim)"
                + (" (more tokens than were fed: is a cache appended twice, or kept in the module itself, so "
                   "that cache=None does not start over?)" if max(h or 0 for h in held) > start else ""))
    return {"out": torch.cat(outs, dim=1), "shapes": shapes, "cache": [plain(t, "the cache") for t in cache]}


def context_edge(module, first, then, device, split_result=split, tokens_at=(2, 4)):
    """Feed ``first`` to ``module``, then ``then`` with the cache it returned (tokens that fill its context
    exactly, or one more): whether the second call raised, and how many tokens the cache held (its keys', or
    the latents' of ``split_result``: dimension ``tokens_at[0]`` of a tensor of rank ``tokens_at[1]``; -1 where
    that cannot be read). Only a cache holding just what was fed measures the edge; one that holds more is the
    cache checks' to name. Judged by ``judging.check_context_edges``."""
    _, kept = split_result(module(first.to(device).clone()))
    tokens = kept[0] if isinstance(kept, (tuple, list)) else kept  # (keys, values), or one tensor of latents
    dim, rank = tokens_at
    return {**raised(lambda: module(then.to(device).clone(), kept), any_error=True),
            "held": tokens.shape[dim] if tokens.dim() == rank else -1}


@PROBES.add("s8.cache")
def cache(lab, device):
    def cached():
        module = load_by_name(gqa(lab, bias=True), gqa_weights(HEADS, KV_HEADS, True), spare_biases=True)
        return module.to(device).eval()

    one_by_one = (1,) * X.shape[1]

    def reset():
        module = cached()
        decode(module, X, one_by_one, device, "a first sequence fed one token at a time")
        # cache=None again: a new sequence
        return decode(module, Y, one_by_one, device, "a second sequence, started again with cache=None")["out"]

    def after_six(more):  # 6 + 4 tokens fill CONTEXT exactly; 6 + 5 are one past it
        return context_edge(cached(), X[:, :6], Y[:, :more], device)

    return {"steps": lab.attempt(lambda: decode(cached(), X, one_by_one, device, "one token at a time")),
            # the same layer's own full forward: a report's picture of each decoded position's error
            "full": lab.attempt(lambda: plain(split(cached()(X.to(device).clone()))[0],
                                              "the output of the full forward")),
            "pieces": lab.attempt(lambda: decode(cached(), X, PIECES, device, "in pieces")["out"]),
            "reset": lab.attempt(reset), "overflow": lab.attempt(after_six, CONTEXT - 5),
            "fits": lab.attempt(after_six, CONTEXT - 6)}


# ---------------------------------------------------------------- fast attention

def fast(lab, d_in=4, d_out=4, context=8, dropout=0.0, heads=2, bias=False):
    """Square unless asked: s8.fast.shapes owns d_in != d_out (see stage 4's ``known_input``)."""
    return lab.modern.FastMultiHeadAttention(d_in, d_out, context, dropout, heads, qkv_bias=bias)


def fused(weights, prefix=""):
    """Stage 4's separate projections as one ``qkv`` layer: rows [W_query; W_key; W_value]."""
    names = ("W_query", "W_key", "W_value")
    packed = {f"{prefix}qkv.weight": torch.cat([weights[f"{n}.weight"] for n in names])}
    if "W_query.bias" in weights:
        packed[f"{prefix}qkv.bias"] = torch.cat([weights[f"{n}.bias"] for n in names])
    packed.update({f"{prefix}{k}": v for k, v in weights.items() if k.startswith("out_proj.")})
    return packed


@PROBES.add("s8.fast.known_weights")
def fast_known(lab, device):
    """Stage 4's known weights, fused: must give stage 4's outputs."""
    def run(heads, d_out, bias):
        module = load_by_name(fast(lab, d_out, d_out, heads=heads, bias=bias), fused(mha_weights(d_out, bias)),
                              spare_biases=True)
        return forward(module.to(device).eval(), known_input(d_out).to(device))

    return {"heads2": lab.attempt(run, 2, 4, False), "heads3_bias": lab.attempt(run, 3, 6, True),
            "heads1": lab.attempt(run, 1, 4, False), "heads4": lab.attempt(run, 4, 8, False)}


@PROBES.add("s8.fast.structure")
def fast_structure(lab, device):
    def run(bias):
        module = fast(lab, 6, 6, 8, 0.0, 2, bias)
        layers = {name: {"linear": isinstance(getattr(module, name, None), nn.Linear),
                         "shape": list(getattr(module, name).weight.shape)
                         if isinstance(getattr(module, name, None), nn.Linear) else [],
                         "bias": getattr(getattr(module, name, None), "bias", None) is not None}
                  for name in ("qkv", "out_proj")}
        return {"layers": layers, "parameters": sorted(n for n, _ in module.named_parameters())}

    return {"bias": lab.attempt(run, True), "no_bias": lab.attempt(run, False)}


_SDPA = F.scaled_dot_product_attention


class SdpaCalls(TorchFunctionMode):
    """Counts the calls of ``F.scaled_dot_product_attention``, and which of them were causal."""

    def __init__(self):
        super().__init__()
        self.calls = self.causal = self.masked = 0

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        if func is _SDPA:
            self.calls += 1
            self.causal += bool(kwargs.get("is_causal", args[5] if len(args) > 5 else False))
            self.masked += (kwargs.get("attn_mask", args[3] if len(args) > 3 else None)) is not None
        return func(*args, **kwargs)


@PROBES.add("s8.fast.sdpa")
def fast_sdpa(lab, device):
    def run():
        module = fast(lab).to(device).eval()
        x = known_input(4).to(device)
        with SdpaCalls() as seen:
            module(x)
        return {"calls": seen.calls, "causal": seen.causal, "masked": seen.masked}

    return lab.attempt(run)


FAST_SHAPES = [*MHA_SHAPES,  # the fast layer keeps stage 4's contract; this check owns its d_in != d_out
               {"name": "d_in 3, d_out 12, 4 heads", "x": (2, 6, 3), "d_in": 3, "heads": 4, "d_out": 12}]


@PROBES.add("s8.fast.shapes")
def fast_shapes(lab, device):
    return {"reports": shape_reports(lab,
        lambda cfg: fast(lab, cfg["d_in"], cfg["d_out"], heads=cfg["heads"]), FAST_SHAPES, device)}


@PROBES.add("s8.fast.divisibility")
def fast_divisibility(lab, device):
    return lab.attempt(raised, lambda: fast(lab, 4, 6, 8, 0.0, 4))


@PROBES.add("s8.fast.leak")
def fast_leak(lab, device):
    return lab.attempt(lambda: leak_report(fast(lab, context=6), 4, 6, device))


@PROBES.add("s8.fast.dropout")
def fast_dropout(lab, device):
    T = DROPOUT_TOKENS

    def run():
        module = load_by_name(fast(lab, T + 1, T + 1, T, DROPOUT_P, 1), fused(shown_weights(T, square=True)),
                              spare_biases=True)
        return dropout_report(module, device, width=T + 1)

    return {"out": lab.attempt(run)}


@PROBES.add("s8.fast.eval")
def fast_eval(lab, device):
    weights = fused(mha_weights(4, False, seed=860))
    return lab.attempt(eval_report, lambda p: fast(lab, 4, 4, 8, p, 2), weights, device, 4,
                       spare_biases=True)


@PROBES.add("s8.fast.gradients")
def fast_gradients(lab, device):
    return lab.attempt(lambda: gradient_report(fast(lab, bias=True).to(device), known_input(4).to(device)))


# ---------------------------------------------------------------- speed
#
# The race is driven from the grading process (``fast_speed``), never run in the student's child: it asks
# the student's child for ``s8.fast.timed`` and a child of the kit's own, which runs no code of the
# student's, for ``kit.fast.timed`` and ``kit.fast.idle``, one request at a time, and the runner times
# each request from outside the process that answers it. Nothing the student's code does in its own
# process can move the kit's times, replace the clock or judge the outputs.

_timed: dict = {}  # the layer a child's race times, built by its first request and kept for the rounds after it


@PROBES.add("s8.fast.timed", timed=True)
def fast_timed(lab, device, seed):
    """The student's side of a round: ``seed`` None builds the layer with the race's weights and warms it
    up on an input of the timed size (the first call allocates and picks kernels); a seed makes that
    round's input and returns the layer's output for it."""
    if seed is None:
        d, h = speed.SIZE["width"], speed.SIZE["heads"]
        module = load_by_name(fast(lab, d, d, speed.SIZE["tokens"], 0.0, h), speed.weights(), spare_biases=True)
        _timed["layer"] = module.to(device).eval()
        with torch.no_grad():
            _timed["layer"](speed.inputs(0).to(device))
        return {"ready": True}
    if "layer" not in _timed:
        raise ProbeError("FastMultiHeadAttention was not built for the race")
    with torch.no_grad():
        return plain(_timed["layer"](speed.inputs(seed).to(device)), "the output of forward")


def _kit_layer(device):
    w = {name: t.to(device) for name, t in speed.weights().items()}
    return lambda x: speed.fast_attention(x, w["qkv.weight"], None, w["out_proj.weight"], w["out_proj.bias"],
                                          speed.SIZE["heads"])


@PROBES.add("kit.fast.timed", timed=True)
def kit_timed(lab, device, seed):
    """The kit's side of a round, in a child that never imports the submission (``lab`` is not used)."""
    if seed is None:
        _timed["kit"] = _kit_layer(device)
        with torch.no_grad():
            _timed["kit"](speed.inputs(0).to(device))
        return {"ready": True}
    with torch.no_grad():
        return plain(_timed["kit"](speed.inputs(seed).to(device)), "the output of the kit's reference")


@PROBES.add("kit.fast.idle", timed=True)
def kit_idle(lab, device, seed):
    """A request that makes a round's input and hands back a tensor of the output's size, and runs no
    layer: what every timed request costs besides its forward, taken off both sides."""
    if seed is None:  # nothing to build
        return {"ready": True}
    return plain(speed.inputs(seed).to(device), "the input")


class _StudentFailed(Exception):
    def __init__(self, record):
        super().__init__(record)
        self.record = record


@PROBES.race("s8.fast.speed", apart=True)  # a third of the reference's grading: a core of its own, where there is one
def fast_speed(ask_student, ask_kit):
    """The race of ``public/speed.py``, in the grading process: ``ask_student(name, seed)`` and
    ``ask_kit(name, seed)`` send one request to the student's child or the kit's and return its
    ``runner.Answer`` (what came back, decoded on demand, and its times). Returns the race's report, or
    the student's error record."""
    def cost(answer):  # every thread's CPU, or its own time where it waited longer than it ran
        return max(answer.cpu_s, answer.own_s)

    def side(ask, name, whose):
        def call(seed):
            answer = ask(name, seed)
            out = answer.observed()
            if is_error_record(out):
                if whose == "kit":  # the kit's own reference failed: the grader's failure, never a verdict
                    raise RuntimeError(f"the kit's reference could not be timed: {out['error'].get('message')}")
                raise _StudentFailed(out)
            return out, cost(answer)
        return call

    ready = ask_student("s8.fast.timed", None).observed()
    if is_error_record(ready):
        return ready
    kit_ready = ask_kit("kit.fast.timed", None).observed()
    if is_error_record(kit_ready):
        raise RuntimeError(f"the kit's reference could not be built: {kit_ready['error'].get('message')}")
    try:
        return speed.race_with(side(ask_student, "s8.fast.timed", "student"), side(ask_kit, "kit.fast.timed", "kit"),
                               idle=lambda seed: cost(ask_kit("kit.fast.idle", seed)),
                               clock="the grader, from outside each process")
    except _StudentFailed as exc:
        return exc.record
    except speed.Unfit as exc:
        return {"error": problem("ProbeError", str(exc))}
