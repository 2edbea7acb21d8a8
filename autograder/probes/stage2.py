"""Stage 2 probes: self-attention with trainable weights."""
import torch

from .common import (INPUTS, Probes, drawn_parameters, forward, gradient_report, load_by_name, plain, qkv_weights,
                     randn, seen_weights)

PROBES = Probes()

D_IN, D_OUT = 5, 4  # d_in != d_out: a transposed weight cannot hide
X = randn(7, D_IN, seed=2)


@PROBES.add("s2.one_query", golden=True)
def one_query(lab, device):
    def run(*args):
        W_query, W_key, W_value, inputs, x_query = [a.clone() for a in args]
        result = lab.self_attention.attend_one_query(x_query, inputs, W_query, W_key, W_value)
        if not isinstance(result, (tuple, list)) or len(result) != 3:
            raise ValueError("attend_one_query should return (attn_scores, attn_weights, context_vec)")
        return [plain(r, name) for r, name in zip(result, ("attn_scores", "attn_weights", "context_vec"))]

    torch.manual_seed(123)  # the book's step-by-step example: three torch.rand(3, 2) matrices
    book_w = [torch.rand(3, 2) for _ in range(3)]
    extra_w = [randn(D_IN, D_OUT, seed=s) for s in (3, 4, 5)]
    return {
        "book": lab.attempt(run, *[w.to(device) for w in book_w], INPUTS.to(device), INPUTS[1].to(device)),
        "extra": lab.attempt(run, *[w.to(device) for w in extra_w], X.to(device), X[2].to(device)),
    }


def _seeded(lab, cls_name, seed, device):
    def build():
        torch.manual_seed(seed)
        return getattr(lab.self_attention, cls_name)(3, 2)

    return {"out": lab.attempt(lambda: forward(build().to(device), INPUTS.to(device))),
            "weights": lab.attempt(seen_weights, build, INPUTS, device),
            "drawn": lab.attempt(drawn_parameters, build)}


@PROBES.add("s2.v1.seeded")
def v1_seeded(lab, device):
    return _seeded(lab, "SelfAttention_v1", 123, device)


@PROBES.add("s2.v2.seeded")
def v2_seeded(lab, device):
    return _seeded(lab, "SelfAttention_v2", 789, device)


V1_WEIGHTS = {name: randn(D_IN, D_OUT, seed=50 + i, scale=0.5)
              for i, name in enumerate(("W_query", "W_key", "W_value"))}


@PROBES.add("s2.v1.known_weights", golden=True)
def v1_known(lab, device):
    def run():
        module = lab.self_attention.SelfAttention_v1(D_IN, D_OUT)
        kinds = {n: type(getattr(module, n, None)).__name__ for n in ("W_query", "W_key", "W_value")}
        load_by_name(module, V1_WEIGHTS)
        return {"kinds": kinds, "out": forward(module.to(device), X.to(device))}

    return lab.attempt(run)


@PROBES.add("s2.v2.known_weights", golden=True)
def v2_known(lab, device):
    def run(bias):
        module = lab.self_attention.SelfAttention_v2(D_IN, D_OUT, qkv_bias=bias)
        kinds = {n: type(getattr(module, n, None)).__name__ for n in ("W_query", "W_key", "W_value")}
        has_bias = getattr(getattr(module, "W_query", None), "bias", None) is not None
        weights = qkv_weights(D_IN, D_OUT, seed=60, bias=bias)
        out = lab.attempt(lambda: forward(load_by_name(module, weights).to(device), X.to(device)))
        return {"kinds": kinds, "has_bias": has_bias, "out": out}

    return {"no_bias": lab.attempt(run, False), "bias": lab.attempt(run, True)}


@PROBES.add("s2.copy")
def copy_v2_into_v1(lab, device):
    def run():
        sa = lab.self_attention
        v2 = load_by_name(sa.SelfAttention_v2(D_IN, D_OUT), qkv_weights(D_IN, D_OUT, seed=70, bias=False))
        v1 = sa.SelfAttention_v1(D_IN, D_OUT)
        returned = sa.copy_v2_into_v1(v2, v1)
        x = X.to(device)
        return {"v1": forward(v1.to(device), x), "v2": forward(v2.to(device), x), "returned_v1": returned is v1}

    return lab.attempt(run)


@PROBES.add("s2.gradients")
def gradients(lab, device):
    def run(cls_name, *args):
        module = getattr(lab.self_attention, cls_name)(*args).to(device)
        return gradient_report(module, X.to(device))

    return {"v1": lab.attempt(run, "SelfAttention_v1", D_IN, D_OUT),
            "v2": lab.attempt(run, "SelfAttention_v2", D_IN, D_OUT, True)}
