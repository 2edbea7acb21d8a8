"""Stage 9 probes: rotary positions, sliding windows, latent attention, and what a cache costs.

Library attention is allowed in this stage (its point is what goes into the keys and which keys a
query sees), so its probes run without the guard that refuses it.
"""
import torch

from .common import (DROPOUT_P, DROPOUT_TOKENS, ProbeError, Probes, device_report, dropout_report, eval_report,
                     gradient_report, leak_report, linear_weights, load_by_name, plain,
                     raised, randn, shape_reports)
from .stage4 import known_input, mha_weights
from .stage8 import Output, context_edge, decode, gqa_weights, shown_weights, split

PROBES = Probes(library_attention=True)

DIM, HEADS, KV_HEADS, CONTEXT = 16, 4, 2, 24
HEAD_DIM = DIM // HEADS  # 4: rotate-half pairs (0, 2), (1, 3); interleaved pairs (0, 1), (2, 3)
WINDOW, LATENT = 4, 6
BAND_WINDOW = 3  # the window whose band the leak probe measures
X = randn(2, 3 * WINDOW + 1, DIM, seed=90)  # 13 tokens: a rolling cache is tested past 3 windows
FULL = 8  # tokens of X the known-weights probes feed at once
PIECES = (3, 2, 1, 1, 1)  # a prefill, then a chunk, then single tokens: FULL tokens in all


def kit_tables(head_dim, context_length, base=10000.0):
    """RoPE's tables, rotate-half layout, as the lab's docstring states them: the probes rotate with
    these, so that ``apply_rope`` is judged apart from the student's ``rope_tables``."""
    frequencies = base ** (-torch.arange(0, head_dim, 2, dtype=torch.float32) / head_dim)
    angles = torch.arange(context_length, dtype=torch.float32)[:, None] * frequencies[None, :]
    angles = torch.cat([angles, angles], dim=-1)
    return angles.cos(), angles.sin()


def pair_of_tensors(result, what):
    if not isinstance(result, (tuple, list)) or len(result) != 2:
        raise ProbeError(f"{what} should return a pair (cos, sin), but returned a {type(result).__name__}")
    return {name: plain(t, f"{what}'s {name}") for t, name in zip(result, ("cos", "sin"))}


# ---------------------------------------------------------------- RoPE

TABLE_CASES = {"small": (8, 6, 10000.0), "base100": (6, 5, 100.0)}  # head_dim, context_length, base


@PROBES.add("s9.rope.tables")
def rope_tables(lab, device):
    def run(head_dim, context, base):
        return pair_of_tensors(lab.frontier.rope_tables(head_dim, context, base),
                               f"rope_tables({head_dim}, {context}, base={base})")

    return {**{case: lab.attempt(run, *args) for case, args in TABLE_CASES.items()},
            "odd": lab.attempt(raised, lambda: lab.frontier.rope_tables(5, 4))}


Q = randn(2, 3, 5, 8, seed=91)  # (batch, heads, seq, head_dim)
RELATIVE = ((3, 1), (6, 4), (11, 9), (2, 2), (8, 8))  # (query position, key position): two differences


@PROBES.add("s9.rope.apply")
def rope_apply(lab, device):
    cos, sin = (t.to(device) for t in kit_tables(8, 16))

    def rotate(x, offset=0):  # a copy every call, on the CPU too: an apply_rope that works in place spoils no other
        return lab.frontier.apply_rope(x.to(device, copy=True), cos, sin, offset)

    def untouched():
        x = Q.to(device, copy=True)
        lab.frontier.apply_rope(x, cos, sin, 2)  # x itself, not rotate's copy: is it the same afterwards?
        return plain(x, "x after apply_rope")

    def rotate_within(offset, rows=6):
        return lab.frontier.apply_rope(Q.to(device, copy=True), cos[:rows], sin[:rows], offset)

    def relative():
        q, k = randn(1, 1, 1, 8, seed=92), randn(1, 1, 1, 8, seed=93)
        return torch.tensor([float((plain(rotate(q, m)) * plain(rotate(k, n))).sum()) for m, n in RELATIVE])

    return {"at0": lab.attempt(lambda: plain(rotate(Q))), "at3": lab.attempt(lambda: plain(rotate(Q, 3))),
            "float64": lab.attempt(lambda: plain(rotate(Q.double(), 1))), "untouched": lab.attempt(untouched),
            # below float32 the tables' own dtype shows: float32 tables times a bfloat16 x is float32
            "bfloat16": lab.attempt(lambda: str(rotate(Q.to(torch.bfloat16), 1).dtype).replace("torch.", "")),
            "relative": lab.attempt(relative),
            "past_end": lab.attempt(raised, lambda: lab.frontier.apply_rope(Q.to(device, copy=True), cos[:4], sin[:4]),
                                any_error=True),
            # the edges with an offset: 5 tokens from position 1 fill 6 rows exactly; from 2 they are one past
            "offset_fits": lab.attempt(raised, lambda: rotate_within(1), any_error=True),
            "offset_past": lab.attempt(raised, lambda: rotate_within(2), any_error=True)}


def rope_gqa(lab, bias=True, context=CONTEXT, **options):
    return lab.frontier.RopeGroupedQueryAttention(DIM, DIM, context, HEADS, KV_HEADS, qkv_bias=bias, **options)


def known_rope_gqa(lab, device, **options):
    weights = gqa_weights(HEADS, KV_HEADS, True, d_in=DIM, d_out=DIM, seed=900)
    return load_by_name(rope_gqa(lab, **options), weights, spare_biases=True).to(device).eval()


@PROBES.add("s9.ropegqa.known", golden=True)
def rope_gqa_known(lab, device):
    def run(**options):
        return plain(split(known_rope_gqa(lab, device, **options)(X[:, :FULL].to(device).clone()))[0],
                     "the output of forward")

    return {"base10000": lab.attempt(run), "base100": lab.attempt(run, rope_base=100.0)}


@PROBES.add("s9.ropegqa.cache", golden=True)
def rope_gqa_cache(lab, device):
    x = X[:, :FULL]

    def steps(pieces):
        return decode(known_rope_gqa(lab, device), x, pieces, device, "RopeGroupedQueryAttention")

    # The layer's own full forward too, with the same weights: only when it is right does a wrong decode
    # point at the cache's offset (a lone first token never depends on RoPE, whatever RoPE does).
    full = lab.attempt(lambda: plain(split(known_rope_gqa(lab, device)(x.to(device, copy=True)))[0],
                                     "the full forward"))
    return {"steps": lab.attempt(steps, (1,) * FULL), "pieces": lab.attempt(lambda: steps(PIECES)["out"]), "full": full}


@PROBES.add("s9.ropegqa.limits")
def rope_gqa_limits(lab, device):
    """The context edges with a cache, in a context of 10: 6 tokens then 4 fill it exactly, 6 then 5 are one past."""
    def after_six(more):
        return context_edge(rope_gqa(lab, context=10).to(device).eval(), X[:, :6], X[:, 6:6 + more], device)

    return {"fits": lab.attempt(after_six, 4), "past": lab.attempt(after_six, 5)}


@PROBES.add("s9.ropegqa.tables")
def rope_gqa_tables(lab, device):
    """Where the tables are after ``.to(device)``, what the state_dict holds, and whether forward runs there."""
    def run():
        module = rope_gqa(lab).to(device)
        buffers = dict(module.named_buffers())
        tables = {name: {"buffer": name in buffers, "device": getattr(module, name).device.type
                         if isinstance(getattr(module, name, None), torch.Tensor) else "none"}
                  for name in ("cos", "sin")}
        out = lab.attempt(lambda: split(module.eval()(X[:, :3].to(device).clone()))[0].device.type)
        return {"tables": tables, "state_dict": sorted(module.state_dict()), "forward": out}

    return lab.attempt(run)


@PROBES.add("s9.structure")
def layer_structure(lab, device):
    """The parameters of the rotary and sliding-window layers, with and without qkv biases, and those of
    the student's own GroupedQueryAttention with the same arguments (the rotary layer extends it)."""
    def parameters(build):
        return {name: list(p.shape) for name, p in build().named_parameters()}

    report = {}
    for bias in (True, False):
        key = "bias" if bias else "no_bias"
        report[f"rope_gqa_{key}"] = lab.attempt(parameters, lambda: rope_gqa(lab, bias=bias))
        report[f"gqa_{key}"] = lab.attempt(parameters, lambda: lab.modern.GroupedQueryAttention(
            DIM, DIM, CONTEXT, HEADS, KV_HEADS, qkv_bias=bias))
        report[f"swa_{key}"] = lab.attempt(parameters, lambda: swa(lab, bias=bias))
    return report


# ---------------------------------------------------------------- sliding windows

def swa(lab, d_in=DIM, d_out=DIM, context=CONTEXT, heads=HEADS, window=WINDOW, dropout=0.0, bias=False):
    return lab.frontier.SlidingWindowAttention(d_in, d_out, context, heads, window, dropout=dropout, qkv_bias=bias)


def swa_weights(bias=True, d_in=DIM, d_out=DIM, seed=950, prefix=""):
    return gqa_weights(HEADS, HEADS, bias, d_in=d_in, d_out=d_out, seed=seed, prefix=prefix)


@PROBES.add("s9.swa.as_mha")
def swa_as_mha(lab, device):
    """A window as long as the context, with stage 4's known weights: must give stage 4's outputs."""
    def run(heads, d_out, bias):
        weights = {k: v for k, v in mha_weights(d_out, bias).items() if k != "mask"}
        module = load_by_name(swa(lab, d_out, d_out, 8, heads, window=8, bias=bias), weights, spare_biases=True)
        return plain(split(module.to(device).eval()(known_input(d_out).to(device)))[0], "the output of forward")

    return {"heads2": lab.attempt(run, 2, 4, False), "heads3_bias": lab.attempt(run, 3, 6, True)}


@PROBES.add("s9.swa.band")
def swa_band(lab, device):
    # context one longer than the input (here and for dropout): the edge is s9.swa.errors' to judge
    return lab.attempt(lambda: leak_report(Output(swa(lab, context=10, window=BAND_WINDOW)), DIM, 9, device))


def rolling(module, x, pieces, device, what="SlidingWindowAttention.forward"):
    """Feed ``x`` in pieces with the cache: the outputs, and how many tokens the cache's keys and
    values hold after every piece (judged there, not here: a cache that grows is the mistake to name)."""
    outs, held, cache, start = [], [], None, 0
    for n in pieces:
        result = module(x[:, start:start + n].to(device).clone(), cache)
        if isinstance(result, (tuple, list)) and len(result) == 2 and _nothing_kept(result[1]):
            # a window of 1 may say "nothing" with None or a pair of None; the next call is given None, which
            # with nothing kept is the same as a new sequence
            out, cache = result[0], None
            held.append([0, 0])
        else:
            out, cache = split(result, what)
            held.append([t.shape[2] if t.dim() == 4 else -1 for t in cache])
        outs.append(plain(out, "the output of forward with a cache"))
        start += n
    return {"out": torch.cat(outs, dim=1), "held": torch.tensor(held)}


def _nothing_kept(cache):
    return cache is None or (isinstance(cache, (tuple, list)) and len(cache) == 2 and cache[0] is None
                             and cache[1] is None)


@PROBES.add("s9.swa.cache", golden=True)
def swa_cache(lab, device):
    def known():
        return load_by_name(swa(lab, bias=True), swa_weights(), spare_biases=True).to(device).eval()

    def past_context(pieces, window=3):
        tokens = sum(pieces)
        module = load_by_name(swa(lab, context=6, window=window, bias=True), swa_weights(), spare_biases=True)
        module = module.to(device).eval()
        alone = [plain(split(module(X[:, max(0, t - window + 1):t + 1].to(device).clone()))[0][:, -1:])
                 for t in range(tokens)]
        try:
            decoded = rolling(module, X[:, :tokens], pieces, device)["out"]
        except ValueError as exc:  # refused: named by the check, which the contract's sentence answers
            return {"refused": f"ValueError: {str(exc)[:200]}"}
        return {"decoded": decoded, "alone": torch.cat(alone, 1)}

    return {"full": lab.attempt(lambda: plain(split(known()(X.to(device).clone()))[0], "the output of forward")),
            "steps": lab.attempt(rolling, known(), X, (1,) * X.shape[1], device),
            "pieces": lab.attempt(rolling, known(), X, (5, 4, 3, 1), device),
            # past context_length, as the contract allows with a cache: 10 tokens one by one in a context of 6,
            # and what each token's window alone gives (a band has no positions: the last 3 tokens are all it sees)
            "past_context": lab.attempt(past_context, (1,) * 10),
            # and in two pieces of 5: each fits in the context alone, though the 2 cached tokens and the second
            # piece together do not; one less than the context, so that a `>=` bound is left to s9.swa.errors
            "past_context_pieces": lab.attempt(past_context, (5, 5)),
            # window 1 keeps nothing: where k[:, :, -(window - 1):] keeps everything
            "window1": lab.attempt(lambda: rolling(swa(lab, window=1).to(device).eval(), X[:, :4], (1,) * 4, device,
                                               "SlidingWindowAttention(..., window=1).forward")["held"])}


@PROBES.add("s9.swa.errors")
def swa_errors(lab, device):
    return {"window0": lab.attempt(raised, lambda: swa(lab, window=0)),
            "divisible": lab.attempt(raised, lambda: swa(lab, d_out=10)),
            "too_long": lab.attempt(raised, lambda: swa(lab, context=6)(X[:, :7].to(device).clone()), any_error=True),
            "fits": lab.attempt(raised, lambda: swa(lab, context=6)(X[:, :6].to(device).clone()), any_error=True)}


SWA_SHAPES = [
    {"name": "4 heads, window 3, batch 1", "x": (1, 7, DIM), "heads": 4, "window": 3, "d_out": DIM, "dtypes": True},
    {"name": "2 heads, window 10 (longer than the input), d_in 5, d_out 6", "x": (3, 5, 5), "d_in": 5, "heads": 2,
     "window": 10, "d_out": 6},
]


@PROBES.add("s9.swa.shapes")
def swa_shapes(lab, device):
    def build(cfg):
        return Output(swa(lab, cfg.get("d_in", DIM), cfg["d_out"], CONTEXT, cfg["heads"], cfg["window"]))

    return {"reports": shape_reports(lab, build, SWA_SHAPES, device)}


@PROBES.add("s9.swa.dropout")
def swa_dropout(lab, device):
    T = DROPOUT_TOKENS

    def run():
        module = swa(lab, T, T + 1, T + 1, 1, window=T, dropout=DROPOUT_P)
        return dropout_report(Output(load_by_name(module, shown_weights(T), spare_biases=True)), device)

    return {"out": lab.attempt(run)}


@PROBES.add("s9.swa.eval")
def swa_eval(lab, device):
    weights = gqa_weights(2, 2, False, d_in=5, d_out=4, seed=960, prefix="inner.")
    return lab.attempt(eval_report, lambda p: Output(swa(lab, 5, 4, 8, 2, window=3, dropout=p)), weights, device,
                   spare_biases=True)


# ---------------------------------------------------------------- latent attention

def mla(lab, d_in=DIM, d_out=DIM, context=CONTEXT, heads=HEADS, latent=LATENT, dropout=0.0):
    return lab.frontier.MultiHeadLatentAttention(d_in, d_out, context, heads, latent, dropout=dropout)


def mla_weights(d_in=DIM, d_out=DIM, latent=LATENT, seed=970, prefix=""):
    weights = linear_weights(prefix + "W_query", d_in, d_out, seed, bias=False)
    weights.update(linear_weights(prefix + "W_kv_down", d_in, latent, seed + 10, bias=False))
    weights.update(linear_weights(prefix + "W_key_up", latent, d_out, seed + 20, bias=False))
    weights.update(linear_weights(prefix + "W_value_up", latent, d_out, seed + 30, bias=False))
    weights.update(linear_weights(prefix + "out_proj", d_out, d_out, seed + 40, bias=True))
    return weights


def split_latent(result):
    if not isinstance(result, (tuple, list)) or len(result) != 2:
        raise ProbeError("MultiHeadLatentAttention.forward should return a pair (out, cache), but returned a "
                         f"{type(result).__name__}")
    out, cache = result
    if type(cache) is not torch.Tensor:
        raise ProbeError("MultiHeadLatentAttention's cache should be one tensor of latents, (batch, tokens, "
                         f"latent_dim), not a {type(cache).__name__}")
    return out, cache


def known_mla(lab, device):
    return load_by_name(mla(lab), mla_weights(), spare_biases=True).to(device).eval()


@PROBES.add("s9.mla.known")
def mla_known(lab, device):
    return lab.attempt(lambda: plain(split_latent(known_mla(lab, device)(X[:, :FULL].to(device).clone()))[0]))


@PROBES.add("s9.mla.cache")
def mla_cache(lab, device):
    def steps(pieces):
        module, cache, outs, shapes, start = known_mla(lab, device), None, [], [], 0
        for n in pieces:
            out, cache = split_latent(module(X[:, start:start + n].to(device).clone(), cache))
            outs.append(plain(out, "the output of forward with a cache"))
            shapes.append(list(cache.shape))
            start += n
        return {"out": torch.cat(outs, dim=1), "shapes": shapes, "cache": plain(cache, "the cache")}

    def after_eight(more):  # in a context of 10, 8 cached + 2 new fill it exactly; 8 + 3 are one past
        return context_edge(mla(lab, context=10).to(device).eval(), X[:, :8], X[:, 8:8 + more], device,
                            split_latent, tokens_at=(1, 3))

    return {"steps": lab.attempt(steps, (1,) * FULL), "pieces": lab.attempt(steps, PIECES),
            "overflow": lab.attempt(after_eight, 3), "fits": lab.attempt(after_eight, 2)}


@PROBES.add("s9.mla.structure")
def mla_structure(lab, device):
    def run():
        module = mla(lab, 10, 12, 8, 3, 5)
        return {name: list(p.shape) for name, p in module.named_parameters()}

    return {"parameters": lab.attempt(run), "divisible": lab.attempt(raised, lambda: mla(lab, d_out=10, heads=4))}


@PROBES.add("s9.mla.leak")
def mla_leak(lab, device):
    # a context one longer than the input: the edge is s9.mla.context_limit's to judge
    return lab.attempt(lambda: leak_report(Output(mla(lab, context=8), split_latent), DIM, 7, device))


@PROBES.add("s9.mla.dropout")
def mla_dropout(lab, device):
    T = DROPOUT_TOKENS

    def run():
        # a context one longer than the input: the edge is s9.mla.context_limit's to judge
        module = mla(lab, T, T + 1, T + 1, 1, T, dropout=DROPOUT_P)
        shown = shown_weights(T)  # zero queries and keys: uniform causal weights; values show them
        weights = {"W_query.weight": torch.zeros(T + 1, T), "W_kv_down.weight": torch.eye(T),
                   "W_key_up.weight": torch.zeros(T + 1, T), "W_value_up.weight": shown["W_value.weight"],
                   "out_proj.weight": shown["out_proj.weight"], "out_proj.bias": shown["out_proj.bias"]}
        return dropout_report(Output(load_by_name(module, weights, spare_biases=True), split_latent), device)

    return {"out": lab.attempt(run)}


@PROBES.add("s9.mla.eval")
def mla_eval(lab, device):
    weights = mla_weights(5, 4, 3, seed=980, prefix="inner.")
    return lab.attempt(eval_report, lambda p: Output(mla(lab, 5, 4, 8, 2, 3, dropout=p), split_latent), weights, device,
                   spare_biases=True)


@PROBES.add("s9.gradients")
def gradients(lab, device):
    x = X[:, :6].to(device)
    return {"rope_gqa": lab.attempt(lambda: gradient_report(Output(rope_gqa(lab)).to(device), x)),
            "swa": lab.attempt(lambda: gradient_report(Output(swa(lab, bias=True)).to(device), x)),
            "mla": lab.attempt(lambda: gradient_report(Output(mla(lab), split_latent).to(device), x))}


# ---------------------------------------------------------------- what a cache costs

# kind, batch, context_length, n_layers, emb_dim, n_heads, n_kv_heads, latent_dim, window, dtype: none of them a
# published model's, so that no number found online answers them
COST_CASES = {
    "mha": ("mha", 3, 700, 5, 384, 6, None, None, None, "fp32"),
    "gqa": ("gqa", 2, 1000, 7, 640, 10, 2, None, None, "bf16"),
    "mqa": ("gqa", 1, 333, 3, 512, 8, 1, None, None, "fp16"),
    "mla": ("mla", 4, 900, 9, 1024, 16, None, 96, None, "bf16"),
    "swa_short": ("swa", 2, 100, 4, 256, 4, 2, None, 300, "fp32"),
    "swa_long": ("swa", 2, 5000, 4, 256, 4, None, None, 256, "fp8"),
}


@PROBES.add("s9.cost")
def cost(lab, device):
    def run(kind, batch, context, layers, emb, heads, kv_heads, latent, window, dtype):
        got = lab.frontier.kv_cache_bytes(kind, batch, context, layers, emb, heads, n_kv_heads=kv_heads,
                                          latent_dim=latent, window=window, dtype=dtype)
        if isinstance(got, bool) or not isinstance(got, (int, float)):
            raise ProbeError(f"kv_cache_bytes returned a {type(got).__name__}; it should return a number of bytes")
        return float(got)

    return {**{case: lab.attempt(run, *args) for case, args in COST_CASES.items()},
            "unknown": lab.attempt(raised, lambda: lab.frontier.kv_cache_bytes("dense", 1, 8, 1, 64, 4)),
            "missing": lab.attempt(raised, lambda: lab.frontier.kv_cache_bytes("mla", 1, 8, 1, 64, 4))}


# ---------------------------------------------------------------- contracts shared by the three layers

LAYER_SHAPES = [
    {"name": "RopeGroupedQueryAttention: 4 heads, 2 key/value heads, batch 1", "layer": "rope", "x": (1, 6, DIM),
     "d_out": DIM, "dtypes": True},
    {"name": "RopeGroupedQueryAttention: 2 heads, 1 key/value head, d_in 5, d_out 8", "layer": "rope", "x": (3, 4, 5),
     "d_in": 5, "d_out": 8},
    {"name": "MultiHeadLatentAttention: 4 heads, latent 6, batch 1", "layer": "mla", "x": (1, 6, DIM), "d_out": DIM,
     "dtypes": True},
    {"name": "MultiHeadLatentAttention: 2 heads, latent 3, d_in 5, d_out 8", "layer": "mla", "x": (3, 4, 5),
     "d_in": 5, "d_out": 8},
]


@PROBES.add("s9.shapes")
def layer_shapes(lab, device):
    def build(cfg):
        d_in, d_out = cfg.get("d_in", DIM), cfg["d_out"]
        if cfg["layer"] == "rope":
            heads = 4 if d_out == DIM else 2
            return Output(lab.frontier.RopeGroupedQueryAttention(d_in, d_out, CONTEXT, heads, heads // 2))
        return Output(mla(lab, d_in, d_out, CONTEXT, 4 if d_out == DIM else 2, LATENT if d_out == DIM else 3),
                      split_latent)

    return {"reports": shape_reports(lab, build, LAYER_SHAPES, device)}


@PROBES.add("s9.devices")
def devices(lab, device):
    """The sliding-window and latent layers after ``.to(device)`` (``common.device_report``, on their output
    alone): what stayed behind, and which ops of their forward met a tensor elsewhere (a band or mask made
    on a fixed device)."""
    return {"swa": lab.attempt(device_report, lab, lambda: Output(swa(lab)), {}, device, DIM),
            "mla": lab.attempt(device_report, lab, lambda: Output(mla(lab)), {}, device, DIM)}
