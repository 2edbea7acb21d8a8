"""Stage 3 probes: causal masks, CausalAttention, dropout."""
import torch
import torch.nn as nn

from .common import (BATCH, DROPOUT_P, DROPOUT_TOKENS, INPUTS, Probes, device_report, drawn_parameters,
                     dropout_report, dropout_weights, eval_report, forward, gradient_report, leak_report,
                     load_by_name, plain, qkv_weights, randn, seen_weights, shape_reports, state_dict_report)

PROBES = Probes()

D_IN, D_OUT, CONTEXT = 5, 4, 8


def book_scores():
    """The book's seed-789 scores, computed by the kit so that stage 3 does not rest on stage 2."""
    torch.manual_seed(789)
    W_query, W_key = nn.Linear(3, 2, bias=False), nn.Linear(3, 2, bias=False)
    nn.Linear(3, 2, bias=False)  # W_value: created so that the seeded draws match the book
    with torch.no_grad():
        return W_query(INPUTS) @ W_key(INPUTS).T


EXTRA_SCORES = randn(7, 7, seed=3, scale=2.0)


def _mask_probe(lab, device, name):
    def run(scores, d_k):
        return plain(getattr(lab.causal, name)(scores.to(device).clone(), d_k), f"{name}(...)")

    return {"book": lab.attempt(run, book_scores(), 2), "extra": lab.attempt(run, EXTRA_SCORES, 4)}


@PROBES.add("s3.mask_multiply", golden=True)
def mask_multiply(lab, device):
    return _mask_probe(lab, device, "causal_weights_by_multiplication")


@PROBES.add("s3.mask_fill", golden=True)
def mask_fill(lab, device):
    return _mask_probe(lab, device, "causal_weights_by_fill")


def build_causal(lab, cls_name="CausalAttention", module="causal"):
    def build(cfg):
        cls = getattr(lab.load(module), cls_name)
        return cls(cfg.get("d_in", D_IN), cfg.get("d_out", D_OUT), cfg.get("context", CONTEXT),
                   cfg.get("dropout", 0.0), qkv_bias=cfg.get("bias", False))

    return build


@PROBES.add("s3.causal.seeded")
def causal_seeded(lab, device):
    def build():
        torch.manual_seed(123)
        return lab.causal.CausalAttention(3, 2, 6, 0.0)

    return {"out": lab.attempt(lambda: forward(build().to(device), BATCH.to(device))),
            "weights": lab.attempt(seen_weights, build, BATCH[:1], device),
            "drawn": lab.attempt(drawn_parameters, build)}


X = randn(2, 6, D_IN, seed=4)  # 6 tokens in a context of 8


def known_forward(build, bias, device, prefix="", d_out=D_OUT):
    module = build({"bias": bias, "d_out": d_out})
    load_by_name(module, qkv_weights(D_IN, d_out, seed=80, bias=bias, prefix=prefix))
    return forward(module.to(device).eval(), X.to(device))


@PROBES.add("s3.causal.known_weights", golden=True)
def causal_known(lab, device):
    build = build_causal(lab)
    return {"no_bias": lab.attempt(known_forward, build, False, device),
            "bias": lab.attempt(known_forward, build, True, device)}


# Shape contracts. The judge reads the expected shapes from these same configs.
SHAPE_CONFIGS = [
    {"name": "batch 1, 8 of 8 tokens", "x": (1, 8, D_IN), "dtypes": True},
    {"name": "batch 3, 5 of 8 tokens", "x": (3, 5, D_IN)},
    {"name": "batch 2, 1 token", "x": (2, 1, D_IN)},
    {"name": "d_in 3, d_out 7", "x": (2, 4, 3), "d_in": 3, "d_out": 7},
]


def expected_shape(cfg):
    b, t, _ = cfg["x"]
    return [b, t, cfg.get("d_out", D_OUT)]


@PROBES.add("s3.causal.shapes")
def causal_shapes(lab, device):
    return {"reports": shape_reports(lab, build_causal(lab), SHAPE_CONFIGS, device)}


@PROBES.add("s3.causal.leak")
def causal_leak(lab, device):
    return lab.attempt(lambda: leak_report(build_causal(lab)({"context": 6}), D_IN, 6, device))


@PROBES.add("s3.causal.mask_buffer")
def causal_mask_buffer(lab, device):
    def run():
        module = build_causal(lab)({})
        buffers = dict(module.named_buffers())
        mask = buffers.get("mask")
        return {
            "is_buffer": mask is not None,
            "in_state_dict": "mask" in module.state_dict(),
            "nonzero": plain(mask != 0, "mask") if mask is not None else None,
        }

    return lab.attempt(run)


@PROBES.add("s3.causal.dropout")
def causal_dropout(lab, device):
    T = DROPOUT_TOKENS

    def run():
        module = build_causal(lab)({"d_in": T, "d_out": T + 1, "context": T, "dropout": DROPOUT_P})
        return dropout_report(load_by_name(module, dropout_weights(T)), device)

    return {"out": lab.attempt(run)}


@PROBES.add("s3.causal.eval")
def causal_eval(lab, device):
    build = build_causal(lab)
    return lab.attempt(eval_report, lambda p: build({"dropout": p}), qkv_weights(D_IN, D_OUT, seed=90, bias=False),
                   device)


@PROBES.add("s3.causal.device")
def causal_device(lab, device):
    build = build_causal(lab)
    weights = qkv_weights(D_IN, D_OUT, seed=95, bias=False)
    return lab.attempt(device_report, lab, lambda: build({}), weights, device, D_IN)


@PROBES.add("s3.causal.gradients")
def causal_gradients(lab, device):
    return lab.attempt(lambda: gradient_report(build_causal(lab)({"bias": True}).to(device), X.to(device)))


@PROBES.add("s3.causal.state_dict")
def causal_state_dict(lab, device):
    build = build_causal(lab)
    return lab.attempt(state_dict_report, lambda: build({}), device, D_IN)
