"""Stage 6 probes: the fused QKV projection, padding masks, attention dropout, q/k/v/o heads."""
import torch
import torch.nn as nn

from .common import (DROPOUT_P, DROPOUT_TOKENS, Probes, dropout_report, dropout_weights, eval_report,
                     gradient_report, linear_weights, load_by_name, padding_report, plain, raised, randn, shape_reports)

PROBES = Probes()

DIM, HEADS = 8, 2
X = randn(3, 5, DIM, seed=60)
WIDE = 18  # 3 heads of 6
X_WIDE = randn(2, 4, WIDE, seed=66)
QKV = ("q", "k", "v")
PROJ = ("q_proj", "k_proj", "v_proj", "o_proj")

# Masks with at least one visible key in every row: their outputs are compared exactly.
KEYS = torch.tensor([[1, 1, 1, 1, 1], [1, 1, 1, 0, 0], [1, 0, 0, 0, 0]])  # (batch, seq): the seeds' padding
PAIRS = torch.tril(torch.ones(5, 5, dtype=torch.long)).expand(3, 5, 5) * KEYS.unsqueeze(1)  # causal and padded
PAIRS[2, 3:, 1:3] = 1  # differs from every broadcast of a (batch, seq) mask
# Padding whose rows are *all* hidden: sequence 2 is nothing but padding.
ALL_PADDED = torch.tensor([[1, 1, 1, 1, 1], [1, 1, 0, 0, 0], [0, 0, 0, 0, 0]])


def separate_weights(names, seed, dim=DIM):
    weights = {}
    for i, name in enumerate(names):
        weights.update(linear_weights(name, dim, dim, seed + 10 * i, bias=True))
    return weights


def packed_weights(seed):
    """The same projections as ``separate_weights(QKV, seed)``, stacked into one ``qkv`` layer."""
    parts = separate_weights(QKV, seed)
    return {"qkv.weight": torch.cat([parts[f"{n}.weight"] for n in QKV]),
            "qkv.bias": torch.cat([parts[f"{n}.bias"] for n in QKV])}


def _module(lab, cls_name, *args):
    return getattr(lab.practical, cls_name)(*args)


def _run(module, device, x=X, mask=None):
    module = module.to(device).eval()
    x = x.to(device).clone()
    return plain(module(x) if mask is None else module(x, mask.to(device).clone()), "the output of forward")


@PROBES.add("s6.softmax", golden=True)
def masked_softmax(lab, device):
    scores = randn(3, 5, 5, seed=61, scale=3.0)

    def run(mask, dtype=torch.float32):
        return plain(lab.practical.masked_softmax(scores.to(device, dtype, copy=True),
                                                  None if mask is None else mask.to(device)), "masked_softmax(...)")

    return {"none": lab.attempt(run, None), "keys": lab.attempt(run, KEYS.unsqueeze(1)),
            "pairs": lab.attempt(run, PAIRS),
            "all_hidden": lab.attempt(run, ALL_PADDED.unsqueeze(1)),
            # "the dtype's most negative finite number": float32's is -inf in bfloat16, where a fill of
            # float32's minimum turns a fully hidden row to nan again
            "all_hidden_bfloat16": lab.attempt(run, ALL_PADDED.unsqueeze(1), torch.bfloat16)}


@PROBES.add("s6.fused.known_weights", golden=True)
def fused_known(lab, device):
    """Packed weights; the reference's output equals three separate projections (the kit's tests hold that)."""
    def run():
        module = load_by_name(_module(lab, "SelfAttentionFused", DIM), packed_weights(620), spare_biases=True)
        return _run(module, device)

    return {"fused": lab.attempt(run)}


@PROBES.add("s6.fused.structure")
def fused_structure(lab, device):
    def run():
        module = _module(lab, "SelfAttentionFused", 6)
        qkv = getattr(module, "qkv", None)
        return {"qkv_linear": isinstance(qkv, nn.Linear),
                "qkv_shape": list(qkv.weight.shape) if isinstance(qkv, nn.Linear) else [],
                "qkv_bias": isinstance(qkv, nn.Linear) and qkv.bias is not None,
                "parameters": sorted(name for name, _ in module.named_parameters())}

    return lab.attempt(run)


FUSED_SHAPES = [
    {"name": "batch 1, 7 tokens, dim 8", "x": (1, 7, DIM), "dtypes": True},
    {"name": "batch 4, 1 token, dim 8", "x": (4, 1, DIM)},
    {"name": "batch 2, 3 tokens, dim 6", "x": (2, 3, 6), "dim": 6},
]


def build(lab, cls_name, *extra):
    return lambda cfg: _module(lab, cls_name, cfg.get("dim", DIM), *extra)


@PROBES.add("s6.fused.shapes")
def fused_shapes(lab, device):
    return {"reports": shape_reports(lab, build(lab, "SelfAttentionFused"), FUSED_SHAPES, device)}


MASK_CASES = {"none": None, "keys": KEYS, "pairs": PAIRS}


@PROBES.add("s6.masked.known_weights", golden=True)
def masked_known(lab, device):
    def run(mask):
        module = load_by_name(_module(lab, "MaskedSelfAttention", DIM, 0.0), separate_weights(QKV, 630))
        return _run(module, device, mask=mask)

    return {name: lab.attempt(run, mask) for name, mask in MASK_CASES.items()}


@PROBES.add("s6.masked.padding")
def masked_padding(lab, device):
    def run():
        module = load_by_name(_module(lab, "MaskedSelfAttention", DIM, 0.0), separate_weights(QKV, 640))
        return padding_report(lambda x, mask: _run(module, device, x, mask), X, KEYS == 0, KEYS, ALL_PADDED)

    return lab.attempt(run)


@PROBES.add("s6.masked.mask_forms")
def masked_mask_forms(lab, device):
    """A (batch, seq) padding mask and its (batch, seq, seq) expansion must act alike."""
    def run():
        module = load_by_name(_module(lab, "MaskedSelfAttention", DIM, 0.0), separate_weights(QKV, 650))
        return {"keys": _run(module, device, mask=KEYS),
                "expanded": _run(module, device, mask=KEYS[:, None, :].expand(3, 5, 5))}

    return lab.attempt(run)


MASKED_SHAPES = [
    {"name": "batch 1, 7 tokens, dim 8", "x": (1, 7, DIM), "dtypes": True},
    {"name": "batch 2, 3 tokens, dim 6", "x": (2, 3, 6), "dim": 6},
]


@PROBES.add("s6.masked.shapes")
def masked_shapes(lab, device):
    return {"reports": shape_reports(lab, build(lab, "MaskedSelfAttention", 0.0), MASKED_SHAPES, device)}


def causal_mask(batch_dims):
    """The causal pattern for the dropout probe, with ``batch_dims`` leading axes of size 1."""
    return torch.tril(torch.ones(DROPOUT_TOKENS, DROPOUT_TOKENS, dtype=torch.long)).view(
        *(1,) * batch_dims, DROPOUT_TOKENS, DROPOUT_TOKENS)


@PROBES.add("s6.masked.dropout")
def masked_dropout(lab, device):
    T = DROPOUT_TOKENS

    def run():
        module = load_by_name(_module(lab, "MaskedSelfAttention", T + 1, DROPOUT_P),
                              dropout_weights(T, names=QKV, square=True))
        return dropout_report(module, device, width=T + 1, mask=causal_mask(1))

    return {"out": lab.attempt(run)}


@PROBES.add("s6.masked.eval")
def masked_eval(lab, device):
    return lab.attempt(eval_report, lambda p: _module(lab, "MaskedSelfAttention", DIM, p),
                   separate_weights(QKV, 660), device, d_in=DIM)


def mhsa(lab, dropout=0.0, dim=DIM, heads=HEADS):
    return _module(lab, "MultiHeadSelfAttention", dim, heads, dropout)


# Masks that broadcast to (batch, heads, seq, seq), each with a visible key in every row.
PER_HEAD = PAIRS.unsqueeze(1).repeat(1, HEADS, 1, 1)
PER_HEAD[:, 1] = KEYS[:, None, :]  # head 1 sees all real tokens, head 0 only the causal ones
MHSA_CASES = {"none": None, "keys": KEYS[:, None, None, :], "shared": torch.tril(torch.ones(5, 5, dtype=torch.long)),
              "per_head": PER_HEAD}


@PROBES.add("s6.mhsa.known_weights", golden=True)
def mhsa_known(lab, device):
    def run(mask):
        return _run(load_by_name(mhsa(lab), separate_weights(PROJ, 670), spare_biases=True), device, mask=mask)

    def wide():  # heads 6 wide: head_dim * 0.5 (3) is not sqrt(head_dim), as it is for the other cases' 4
        module = load_by_name(mhsa(lab, dim=WIDE, heads=3), separate_weights(PROJ, 675, dim=WIDE), spare_biases=True)
        return _run(module, device, x=X_WIDE)

    return {**{name: lab.attempt(run, mask) for name, mask in MHSA_CASES.items()}, "heads_of_6": lab.attempt(wide)}


@PROBES.add("s6.mhsa.broadcast")
def mhsa_broadcast(lab, device):
    """(batch, 1, 1, seq) must act like its expansion to every head and query."""
    def run():
        module = load_by_name(mhsa(lab), separate_weights(PROJ, 680), spare_biases=True)
        return {"keys": _run(module, device, mask=KEYS[:, None, None, :]),
                "expanded": _run(module, device, mask=KEYS[:, None, None, :].expand(3, HEADS, 5, 5).contiguous())}

    return lab.attempt(run)


@PROBES.add("s6.mhsa.padding")
def mhsa_padding(lab, device):
    def run():
        module = load_by_name(mhsa(lab), separate_weights(PROJ, 690), spare_biases=True)
        return padding_report(lambda x, mask: _run(module, device, x, mask), X, KEYS == 0,
                              KEYS[:, None, None, :], ALL_PADDED[:, None, None, :])

    return lab.attempt(run)


@PROBES.add("s6.mhsa.structure")
def mhsa_structure(lab, device):
    def run():
        module = mhsa(lab, dim=12, heads=3)
        layers = {name: getattr(module, name, None) for name in PROJ}
        return {name: {"linear": isinstance(layer, nn.Linear),
                       "shape": list(layer.weight.shape) if isinstance(layer, nn.Linear) else [],
                       "bias": isinstance(layer, nn.Linear) and layer.bias is not None}
                for name, layer in layers.items()}

    return lab.attempt(run)


@PROBES.add("s6.mhsa.divisibility")
def mhsa_divisibility(lab, device):
    return lab.attempt(raised, lambda: mhsa(lab, dim=10, heads=4))


MHSA_SHAPES = [
    {"name": "batch 1, 7 tokens, 2 heads of 4", "x": (1, 7, DIM), "dtypes": True},
    {"name": "batch 3, 1 token, 2 heads of 4", "x": (3, 1, DIM)},
    {"name": "dim 12, 3 heads of 4", "x": (2, 5, 12), "dim": 12, "heads": 3},
]


@PROBES.add("s6.mhsa.shapes")
def mhsa_shapes(lab, device):
    return {"reports": shape_reports(lab, lambda cfg: mhsa(lab, dim=cfg.get("dim", DIM), heads=cfg.get("heads", HEADS)),
                                     MHSA_SHAPES, device)}


@PROBES.add("s6.mhsa.dropout")
def mhsa_dropout(lab, device):
    T = DROPOUT_TOKENS

    def run():
        weights = dropout_weights(T, names=PROJ[:3], square=True)
        weights.update({"o_proj.weight": torch.eye(T + 1), "o_proj.bias": torch.zeros(T + 1)})
        module = load_by_name(mhsa(lab, dropout=DROPOUT_P, dim=T + 1, heads=1), weights, spare_biases=True)
        return dropout_report(module, device, width=T + 1, mask=causal_mask(0))

    return {"out": lab.attempt(run)}


@PROBES.add("s6.mhsa.eval")
def mhsa_eval(lab, device):
    return lab.attempt(eval_report, lambda p: mhsa(lab, dropout=p), separate_weights(PROJ, 700), device, d_in=DIM,
                   spare_biases=True)


@PROBES.add("s6.gradients")
def gradients(lab, device):
    def run(module):
        return gradient_report(module.to(device), X.to(device))

    return {"SelfAttentionFused": lab.attempt(lambda: run(_module(lab, "SelfAttentionFused", DIM))),
            "MaskedSelfAttention": lab.attempt(lambda: run(_module(lab, "MaskedSelfAttention", DIM, 0.0))),
            "MultiHeadSelfAttention": lab.attempt(lambda: run(mhsa(lab)))}

