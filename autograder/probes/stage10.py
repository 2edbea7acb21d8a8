"""Stage 10 probes: the GPT's parts, the whole model, the kit's trained weights through the
student's code, generation with and without a cache, and a few training steps.

Library attention is allowed (the attention inside is stage 4's and stage 8's, judged there). The
trained weights are public (``public/tiny_gpt``) and read when this module is imported, before
the child is shut into its world. Training steps with the kit's ``SGD``, not torch's: torch's
optimizers import ``torch._dynamo`` (0.9 s) at their first step, which no grading needs.
"""
from functools import partial

import torch
import torch.nn as nn

from ..public import tiny_gpt
from ..public.feedback import is_error_record
from ..public.pictures import attention_by_block
from .common import (DROPOUT_P, ProbeError, Probes, eval_report, leak_report, linear_weights, load_by_name,
                     plain, randn)

PROBES = Probes(library_attention=True)

TRAINED = tiny_gpt.weights()
TINY = tiny_gpt.CONFIG
SMALL = {"vocab_size": 11, "context_length": 8, "emb_dim": 12, "n_heads": 3, "n_layers": 2, "drop_rate": 0.0,
         "qkv_bias": False}
GPT2 = {"vocab_size": 50257, "context_length": 1024, "emb_dim": 768, "n_heads": 12, "n_layers": 12,
        "drop_rate": 0.1, "qkv_bias": False}  # the book's GPT_CONFIG_124M: the kit's copy, not the student's
# Stage 4 prices out_proj's bias (docs/checks.md): a block is judged with it as the contract has it.
SPARED = ("out_proj",)
PROMPTS = tiny_gpt.repeats(3, seed=4242, length=40)  # held out: training never drew from this seed
NEW_TOKENS = 30  # 40 + 30 run past the 64-token context: generation must crop (or start its cache again)
HEADS_SAMPLE = "quartz quartz quar"  # whose heads the report draws: a word of different letters, 18 labelled cells
X = randn(2, 5, SMALL["emb_dim"], seed=101)
X_MANY = randn(16, 8, SMALL["emb_dim"], seed=106)  # enough values that dropout's share is measured within 1%

# ---------------------------------------------------------------- known weights, by name


def norm_weights(prefix, dim, seed):
    at = f"{prefix}." if prefix else ""
    return {f"{at}scale": 1 + randn(dim, seed=seed, scale=0.3), f"{at}shift": randn(dim, seed=seed + 1, scale=0.2)}


def ff_weights(prefix, dim, seed):
    return {**linear_weights(f"{prefix}layers.0", dim, 4 * dim, seed, bias=True),
            **linear_weights(f"{prefix}layers.2", 4 * dim, dim, seed + 2, bias=True)}


def block_weights(cfg, seed, prefix=""):
    d = cfg["emb_dim"]
    weights = {}
    for i, name in enumerate(("W_query", "W_key", "W_value")):
        weights.update(linear_weights(f"{prefix}att.{name}", d, d, seed + 10 * i, bias=cfg["qkv_bias"]))
    weights.update(linear_weights(f"{prefix}att.out_proj", d, d, seed + 30, bias=True))
    weights.update(ff_weights(f"{prefix}ff.", d, seed + 40))
    weights.update(norm_weights(f"{prefix}norm1", d, seed + 50))
    weights.update(norm_weights(f"{prefix}norm2", d, seed + 60))
    return weights


def gpt_weights(cfg, seed):
    d, v = cfg["emb_dim"], cfg["vocab_size"]
    weights = {"tok_emb.weight": randn(v, d, seed=seed), "pos_emb.weight": randn(cfg["context_length"], d,
                                                                                  seed=seed + 1),
               "out_head.weight": randn(v, d, seed=seed + 2, scale=0.5)}
    for i in range(cfg["n_layers"]):
        weights.update(block_weights(cfg, seed + 100 * (i + 1), prefix=f"trf_blocks.{i}."))
    weights.update(norm_weights("final_norm", d, seed + 3))
    return weights


def shapes_of(module):
    return {name: list(p.shape) for name, p in module.named_parameters()}


# ---------------------------------------------------------------- the parts

NORM_X = torch.stack([randn(2, 6, seed=102) * 3 + 5,  # far from 0 on average: the mean must go
                      1e-3 * randn(2, 6, seed=103)]).double()  # a variance near eps: eps must sit under the root
GELU_X = torch.linspace(-5, 5, 41)


@PROBES.add("s10.parts")
def parts(lab, device):
    d = NORM_X.shape[-1]

    def norm(dtype):
        module = load_by_name(lab.gpt.LayerNorm(d), norm_weights("", d, 104))
        return plain(module.to(device, dtype)(NORM_X.to(device, dtype)), "LayerNorm's output")

    def ff():
        module = load_by_name(lab.gpt.FeedForward({**SMALL, "emb_dim": d}), ff_weights("", d, 105))
        # The kit's GELU for the student's: s10.gelu prices GELU; this check, the network around it.
        for name, part in list(module.named_modules()):
            if name and isinstance(part, lab.gpt.GELU):
                parent, _, leaf = name.rpartition(".")
                setattr(module.get_submodule(parent) if parent else module, leaf, nn.GELU(approximate="tanh"))
        return plain(module.to(device)(NORM_X[0].float().to(device)), "FeedForward's output")

    return {"norm_shapes": lab.attempt(lambda: shapes_of(lab.gpt.LayerNorm(d))),
            "norm": lab.attempt(norm, torch.float64), "norm_float32": lab.attempt(norm, torch.float32),
            "gelu": lab.attempt(lambda: plain(lab.gpt.GELU().to(device)(GELU_X.double().to(device)), "GELU's output")),
            "gelu_float32": lab.attempt(lambda: plain(lab.gpt.GELU().to(device)(GELU_X.to(device)), "GELU's output")),
            "ff_shapes": lab.attempt(lambda: shapes_of(lab.gpt.FeedForward({**SMALL, "emb_dim": d}))),
            "ff": lab.attempt(ff)}


# ---------------------------------------------------------------- the block

class KitNorm(nn.Module):
    def __init__(self, scale, shift):
        super().__init__()
        self.scale, self.shift = nn.Parameter(scale.clone()), nn.Parameter(shift.clone())

    def forward(self, x):
        return nn.functional.layer_norm(x, x.shape[-1:], self.scale, self.shift, eps=1e-5)


class KitFeedForward(nn.Module):
    def __init__(self, weights, prefix):
        super().__init__()
        self.inner = nn.Linear(*weights[f"{prefix}layers.0.weight"].shape[::-1])
        self.outer = nn.Linear(*weights[f"{prefix}layers.2.weight"].shape[::-1])
        load_by_name(self, {f"{new}.{leaf}": weights[f"{prefix}layers.{old}.{leaf}"]
                            for new, old in (("inner", 0), ("outer", 2)) for leaf in ("weight", "bias")})

    def forward(self, x):
        return self.outer(nn.functional.gelu(self.inner(x), approximate="tanh"))


def cached_attention(x, weights, prefix, heads, cache=None, kv_heads=None):
    """Stage 4's causal multi-head attention (no dropout) of the known ``weights`` under ``prefix`` (qkv
    biases where they hold some), by PyTorch's own pieces, in ``x``'s dtype, with stage 8's cache and key
    and value heads: ``cache`` holds the ``(keys, values)`` of the tokens before ``x``'s (each (batch,
    kv_heads, past, head_dim)), which ``x``'s tokens see too. Returns the output and the cache of past + n
    tokens."""
    b, n, d = x.shape
    kv_heads = kv_heads or heads
    w = {name: weights[f"{prefix}{name}"].to(x) for name in
         ("W_query.weight", "W_key.weight", "W_value.weight", "out_proj.weight", "out_proj.bias")}
    w.update({name: weights[f"{prefix}{name}"].to(x) for name in ("W_query.bias", "W_key.bias", "W_value.bias")
              if f"{prefix}{name}" in weights})

    def project(p, h):  # (batch, h heads, n, head_dim)
        return nn.functional.linear(x, w[f"{p}.weight"], w.get(f"{p}.bias")).view(b, n, h, d // heads).transpose(1, 2)

    q, k, v = project("W_query", heads), project("W_key", kv_heads), project("W_value", kv_heads)
    if cache is not None:
        k, v = torch.cat([cache[0].to(k), k], dim=2), torch.cat([cache[1].to(v), v], dim=2)
    past = k.shape[2] - n
    # query i sits at position past + i and sees keys 0 .. past + i (is_causal would align the wrong corners)
    seen = torch.arange(k.shape[2], device=x.device) <= past + torch.arange(n, device=x.device)[:, None]
    shared = heads // kv_heads  # query heads per key/value head
    context = nn.functional.scaled_dot_product_attention(q, k.repeat_interleave(shared, 1),
                                                         v.repeat_interleave(shared, 1), attn_mask=seen)
    out = nn.functional.linear(context.transpose(1, 2).reshape(b, n, d), w["out_proj.weight"], w["out_proj.bias"])
    return out, (k, v)


def causal_attention(x, weights, prefix, heads):
    """``cached_attention`` without a cache: the kit's part in the student's block, and the judge's reference block."""
    return cached_attention(x, weights, prefix, heads)[0]


class KitAttention(nn.Module):
    def __init__(self, weights, prefix, heads, kv_heads=None):
        super().__init__()
        self.weights, self.prefix, self.heads, self.kv_heads = weights, prefix, heads, kv_heads
        self.calls = 0

    def forward(self, x):
        self.calls += 1
        return causal_attention(x, self.weights, self.prefix, self.heads)


class KitCachedAttention(KitAttention):
    """The kit's attention as a cached block holds it: ``forward(x, cache)`` returns ``(output, cache)``."""

    def forward(self, x, cache=None):
        self.calls += 1
        return cached_attention(x, self.weights, self.prefix, self.heads, cache, self.kv_heads)


KIT_ATTENTION = {"GPTModel": KitAttention, "CachedGPTModel": KitCachedAttention}


def with_kit_attention(model, cls="GPTModel"):
    """``model``, the student's ``cls``, with the kit's attention in every block's ``att`` in place of the
    student's: of the student's own layer's weights (its parameters by name, biases too) and heads, so that
    only how the attention computes changes, not how the block configured it. An end-to-end check that
    failed judges this model's run (its twin, ``Check.twin``) as it judged the student's own, to say whether
    the mistake is in the attention (stages 4 and 8) or in this stage's code."""
    blocks = getattr(model, "trf_blocks", None)
    if not isinstance(blocks, (nn.Sequential, nn.ModuleList)):
        raise ProbeError("the model keeps no blocks in trf_blocks")
    for block in blocks:
        own = getattr(block, "att", None)
        heads = getattr(own, "num_heads", None)
        if not isinstance(own, nn.Module) or not isinstance(heads, int):
            raise ProbeError("a block has no att with its num_heads")
        weights = {name: value.detach() for name, value in own.state_dict().items()}
        block.att = KIT_ATTENTION[cls](weights, "", heads, getattr(own, "num_kv_heads", None))
    return model


def known_block(lab, device, drop=0.0, weights=None, cls="TransformerBlock", attention=KitAttention):
    """The student's ``TransformerBlock`` with the kit's own parts of known weights in its ``att``,
    ``ff``, ``norm1`` and ``norm2``: the block's checks judge how it wires them (pre-norm, the two
    shortcuts, dropout on the branches); each part has its own check, and stage 4 the attention.
    ``cls="CachedTransformerBlock"`` with ``attention=KitCachedAttention``: the cached block, alike."""
    weights = weights or block_weights(SMALL, 110)
    block = getattr(lab.gpt, cls)({**SMALL, "drop_rate": drop})
    block.att = attention(weights, "att.", SMALL["n_heads"])
    block.ff = KitFeedForward(weights, "ff.")
    block.norm1 = KitNorm(weights["norm1.scale"], weights["norm1.shift"])
    block.norm2 = KitNorm(weights["norm2.scale"], weights["norm2.shift"])
    return block.to(device)


def silent(*branches):
    """Known weights under which the ``branches`` ("att", "ff") of a block add exactly 0 (a zero last
    layer): with both silent the block's output is its input in train mode too, unless dropout acts on
    the shortcut; with the attention silent, train mode shows the feed-forward branch's dropout alone."""
    weights = block_weights(SMALL, 110)
    last = {"att": ("att.out_proj.weight", "att.out_proj.bias"), "ff": ("ff.layers.2.weight", "ff.layers.2.bias")}
    for name in (n for b in branches for n in last[b]):
        weights[name] = torch.zeros_like(weights[name])
    return weights


@PROBES.add("s10.block", golden=True)
def block(lab, device):
    def run(train, drop=0.0, weights=None, x=X):
        module = known_block(lab, device, drop, weights).train(train)
        torch.manual_seed(0)
        return plain(module(x.to(device, copy=True)), "TransformerBlock's output")

    def run_cached(train, drop=0.0, weights=None, x=X):
        module = known_block(lab, device, drop, weights, "CachedTransformerBlock", KitCachedAttention).train(train)
        torch.manual_seed(0)
        result = module(x.to(device, copy=True))
        if not isinstance(result, (tuple, list)) or len(result) != 2:
            raise ProbeError(f"CachedTransformerBlock.forward should return a pair (x, cache), but returned a "
                             f"{type(result).__name__}")
        return plain(result[0], "CachedTransformerBlock's output")

    return {"eval": lab.attempt(run, False), "train": lab.attempt(run, True),
            "dropout_eval": lab.attempt(eval_report, lambda p: known_block(lab, "cpu", p), {}, device,
                                    d_in=SMALL["emb_dim"]),
            "silent_train": lab.attempt(run, True, DROPOUT_P, silent("att", "ff")),
            "silent_eval": lab.attempt(run, False, DROPOUT_P, silent("att", "ff")),
            "ff_train": lab.attempt(run, True, DROPOUT_P, silent("att"), X_MANY),
            "ff_eval": lab.attempt(run, False, DROPOUT_P, silent("att"), X_MANY),
            # The cached block's dropout in train mode, measured as the block's is (its eval mode is the
            # end-to-end checks': the trained model, decoded in pieces).
            "cached_eval": lab.attempt(run_cached, False),
            "cached_silent_train": lab.attempt(run_cached, True, DROPOUT_P, silent("att", "ff")),
            "cached_silent_eval": lab.attempt(run_cached, False, DROPOUT_P, silent("att", "ff")),
            "cached_ff_train": lab.attempt(run_cached, True, DROPOUT_P, silent("att"), X_MANY)}


# ---------------------------------------------------------------- the model

def small_gpt(lab, cls="GPTModel", cfg=SMALL, seed=120):
    return load_by_name(getattr(lab.gpt, cls)(cfg), gpt_weights(cfg, seed), spare_biases=SPARED)


@PROBES.add("s10.gpt.structure")
def structure(lab, device):
    def counted():
        with torch.device("meta"):  # 163 million parameters with no memory behind them
            model = lab.gpt.GPTModel(GPT2)
        head = getattr(model, "out_head", None)
        params = list(model.parameters())  # a parameter shared by two layers counts once, as the book counts
        return {"total": sum(p.numel() for p in params),
                "attention": sum(p.numel() for n, p in model.named_parameters() if ".att." in f".{n}"),
                "head": sum(p.numel() for p in head.parameters()) if isinstance(head, nn.Module) else -1}

    def tied():
        model = lab.gpt.GPTModel(SMALL)
        head, embedding = getattr(model, "out_head", None), getattr(model, "tok_emb", None)
        return bool(isinstance(head, nn.Module) and isinstance(embedding, nn.Module)
                    and getattr(head, "weight", None) is getattr(embedding, "weight", 0))

    def keys(cls):
        return sorted(getattr(lab.gpt, cls)(SMALL).state_dict())

    return {"shapes": lab.attempt(lambda: shapes_of(lab.gpt.GPTModel(SMALL))), "count": lab.attempt(counted),
            "tied": lab.attempt(tied),
            "keys": lab.attempt(keys, "GPTModel"), "cached_keys": lab.attempt(keys, "CachedGPTModel")}


BARE = {**SMALL, "n_layers": 0, "drop_rate": DROPOUT_P}  # a model of no blocks: its own dropout alone
BARE_SEED = 120  # small_gpt's weights: the judge looks up the embeddings the model sums
# 24 sequences of 7 tokens, within the context (positions are not this check's): 2,016 embedded values,
# enough that dropout's share is measured within 1%.
EMBEDDED = torch.arange(24 * 7).reshape(24, 7) * 5 % SMALL["vocab_size"]


@PROBES.add("s10.gpt.dropout")
def gpt_dropout(lab, device):
    """The models' own dropout, with no block at all (a block's is ``s10.block.dropout``'s): both models'
    logits in eval mode, with dropout configured and without; and what ``drop_emb`` makes of the
    embeddings in train and in eval mode, which the judge holds to inverted dropout of their sum (the
    logits alone would pass the token embeddings dropped out alone: they change too). For that,
    identities stand in for ``final_norm`` and ``out_head``, so the model returns what it would
    normalise, whether or not it calls its norm and whatever positions it embeds (``s10.gpt.trained``
    prices those)."""
    # within the context: positions are not this check's
    ids = PROMPTS[:2, :SMALL["context_length"] - 1] % SMALL["vocab_size"]

    def logits(cls, cfg):
        model = small_gpt(lab, cls, cfg, BARE_SEED).to(device).eval()
        torch.manual_seed(0)
        with torch.no_grad():
            out = model(ids.to(device))
        return plain(out[0] if isinstance(out, (tuple, list)) else out, f"{cls}'s logits")

    def eval_pair(cls):
        return {"dropout": logits(cls, BARE), "p0": logits(cls, {**BARE, "drop_rate": 0.0})}

    def embedded(cls, train):
        model = small_gpt(lab, cls, BARE, BARE_SEED)
        model.final_norm, model.out_head = nn.Identity(), nn.Identity()
        model = model.to(device).train(train)
        torch.manual_seed(0)
        with torch.no_grad():
            out = model(EMBEDDED.to(device))
        return plain(out[0] if isinstance(out, (tuple, list)) else out, f"{cls}'s embeddings after drop_emb")

    def embedded_pair(cls):
        return {"train": embedded(cls, True), "eval": embedded(cls, False)}

    return {"gpt": lab.attempt(eval_pair, "GPTModel"), "cached": lab.attempt(eval_pair, "CachedGPTModel"),
            "embedding": lab.attempt(embedded_pair, "GPTModel"),
            "cached_embedding": lab.attempt(embedded_pair, "CachedGPTModel")}


class SoftTokens(nn.Module):
    """A GPT fed vectors instead of token ids (their embeddings are ``x @ tok_emb.weight``), so that
    the leak measurement shared with every causal layer (``common.leak_report``) can perturb them and
    take gradients."""

    WRAPS = "gpt"

    def __init__(self, gpt):
        super().__init__()
        self.gpt = gpt

    def forward(self, x):
        embedding = getattr(self.gpt, "tok_emb", None)
        if not isinstance(embedding, nn.Embedding):
            raise ProbeError("GPTModel has no nn.Embedding named tok_emb")
        handle = embedding.register_forward_hook(lambda module, args, out: x @ module.weight)
        try:
            return self.gpt(torch.zeros(x.shape[:2], dtype=torch.long, device=x.device))
        finally:
            handle.remove()


def leak(lab, device, kit=False):
    def report():
        model = with_kit_attention(small_gpt(lab)) if kit else small_gpt(lab)
        return ran(model, kit, leak_report(SoftTokens(model), SMALL["vocab_size"], 7, device))

    return {"leak": lab.attempt(report)}


# ---------------------------------------------------------------- the trained model

def strict_load(model):
    """The shipped weights into ``model`` with ``strict=True``: the error's text ("" when they load), and
    the names missing from the model and those it has that the weights lack."""
    try:
        model.load_state_dict(TRAINED, strict=True)
        message = ""
    except RuntimeError as exc:
        message = str(exc)[:600]
    own = model.state_dict()
    return {"message": message, "missing": sorted(set(TRAINED) - set(own)),
            "unexpected": sorted(set(own) - set(TRAINED)),
            "misshapen": sorted(n for n in set(own) & set(TRAINED) if tuple(own[n].shape) != tuple(TRAINED[n].shape))}


def trained(lab, cls, device, n_layers=TINY["n_layers"], kit=False):
    """The student's model with the trained weights: its parameters by name (the numbers checks do not
    fail for a mask that is not saved, which stage 5 prices), on ``device``, in eval mode. With fewer
    ``n_layers``, the trained model's first blocks; with ``kit``, the kit's attention in its blocks."""
    model = getattr(lab.gpt, cls)({**TINY, "drop_rate": 0.1, "n_layers": n_layers})  # GPT-2's rate: eval must drop none
    left_out = [f"trf_blocks.{i}." for i in range(n_layers, TINY["n_layers"])]
    parameters = {k: v for k, v in TRAINED.items() if not k.endswith(".mask") and not k.startswith(tuple(left_out))}
    model = load_by_name(model, parameters, spare_biases=SPARED)
    return (with_kit_attention(model, cls) if kit else model).to(device).eval()


def ran(model, kit, result):
    """``result`` of a run of ``model``; of a twin's (``kit``), only if every block called the kit's attention put
    in its ``att``: one that calls its attention under another name ran the student's own, and a twin of it
    would name the wrong part."""
    if kit and not all(getattr(block.att, "calls", 0) for block in model.trf_blocks):
        raise ProbeError("a block did not call its att")
    return result


def kit_greedy(model, idx, steps, device):
    """The kit's own greedy loop (the contract's, without a cache): the model judged apart from the student's loop."""
    idx = idx.to(device)
    for _ in range(steps):
        with torch.no_grad():
            logits = model(idx[:, -TINY["context_length"]:])
        idx = torch.cat([idx, plain(logits, "the logits")[:, -1].argmax(-1, keepdim=True).to(device)], dim=1)
    return plain(idx)


@PROBES.add("s10.gpt.loads")
def loads(lab, device):
    return lab.attempt(lambda: strict_load(lab.gpt.GPTModel(TINY)))


def trained_model(lab, device, kit=False):
    def logits():
        model = trained(lab, "GPTModel", device, kit=kit)
        with torch.no_grad():
            return ran(model, kit, plain(model(PROMPTS.to(device)), "the logits"))

    def tokens():
        model = trained(lab, "GPTModel", device, kit=kit)
        return ran(model, kit, kit_greedy(model, PROMPTS, NEW_TOKENS, device))

    def sample_heads():
        if device != "cpu" or kit:
            return None
        return plain(attention_by_block(trained(lab, "GPTModel", device), tiny_gpt.encode(HEADS_SAMPLE)),
                     "the attention weights")

    heads = lab.attempt(sample_heads)  # for the picture alone: one that cannot be drawn is not drawn
    return {"logits": lab.attempt(logits), "tokens": lab.attempt(tokens),
            "heads": None if is_error_record(heads) else heads}


def writes(lab, device, kit=False):
    """The end to end: the student's own loops on the student's own models, with the trained weights."""
    def greedy():
        model = trained(lab, "GPTModel", device, kit=kit)
        return ran(model, kit, plain(lab.gpt.generate_greedy(model, PROMPTS.to(device), NEW_TOKENS,
                                                             TINY["context_length"])))

    def cached():
        model = trained(lab, "CachedGPTModel", device, kit=kit)
        return ran(model, kit, plain(lab.gpt.generate_cached(model, PROMPTS.to(device), NEW_TOKENS,
                                                             TINY["context_length"])))

    return {"greedy": lab.attempt(greedy), "cached": lab.attempt(cached)}


# ---------------------------------------------------------------- the cached model

PIECES = (5, 1, 1, 2, 1)  # a prefill, single tokens, a chunk


def cached_model(lab, device, kit=False):
    """The student's CachedGPTModel with the trained weights, fed one prompt in pieces (each with the
    caches of the piece before): the logits of every piece, and how many tokens each cache held after it;
    and the same with the trained model's first block alone, since a model of one block is in the contract
    too (``caches[1]`` read for the length so far works only with two)."""
    def run(n_layers):
        model = trained(lab, "CachedGPTModel", device, n_layers, kit)
        caches, start, outs, held = None, 0, [], []
        for n in PIECES:
            with torch.no_grad():
                result = model(PROMPTS[:, start:start + n].to(device), caches)
            if not isinstance(result, (tuple, list)) or len(result) != 2:
                raise ProbeError(f"CachedGPTModel.forward should return a pair (logits, caches), but returned a "
                                 f"{type(result).__name__}")
            out, caches = result
            outs.append(plain(out, "the logits"))
            start += n
            if not isinstance(caches, (tuple, list)) or len(caches) != n_layers:
                raise ProbeError(f"CachedGPTModel.forward should return one cache per block ({n_layers}), "
                                 f"as a list; it returned a {type(caches).__name__}"
                                 + (f" of {len(caches)}" if isinstance(caches, (tuple, list)) else ""))
            held.append([int(c[0].shape[2]) if isinstance(c, (tuple, list)) and len(c) == 2
                         and isinstance(c[0], torch.Tensor) and c[0].dim() == 4 else -1 for c in caches])
        return ran(model, kit, {"logits": torch.cat(outs, dim=1), "held": held})

    return {"model": lab.attempt(run, TINY["n_layers"]), "one_block": lab.attempt(run, 1)}


def with_twins(*probes):
    """Declare the end-to-end probes (name, function, golden), each with its twin: the same run of the student's
    model holding the kit's attention, which the grading runs only where the student's own failed its check
    (``Check.twin``)."""
    for name, probe, golden in probes:
        PROBES.add(name, golden=golden)(probe)
        PROBES.add(f"{name}.twin")(partial(probe, kit=True))


with_twins(("s10.gpt.leak", leak, False), ("s10.gpt.trained", trained_model, True), ("s10.gpt.writes", writes, True),
           ("s10.cached.model", cached_model, True))


# ---------------------------------------------------------------- the loops, on the kit's stand-in models

RULE_VOCAB = 13
RULE_CONTEXT = 12
RULE_PROMPT = torch.tensor([[3, 1, 4, 1, 5], [2, 7, 1, 8, 2]])
RULE_NEW = 9  # 5 + 9 tokens run past a context of 12: the cache fills, and starts afresh


def rule_next(window):
    """The stand-in's rule: after the tokens ``window`` (a list, the first at position 0), the next
    token. It depends on the window's first token and length, so that a loop that feeds the wrong
    tokens, or does not crop to the context, gets other tokens."""
    return (5 * window[-1] + 2 * window[0] + len(window)) % RULE_VOCAB


def rule_logits(ids):
    """Logits (batch, n, vocab) that make ``rule_next`` of each prefix the argmax, by a clear margin."""
    b, n = ids.shape
    out = torch.zeros(b, n, RULE_VOCAB)
    for i in range(b):
        for t in range(n):
            out[i, t] = -(torch.arange(RULE_VOCAB) - rule_next(ids[i, :t + 1].tolist())).abs().float()
    return out


class Rule(nn.Module):
    """A stand-in for ``GPTModel``: logits by ``rule_next``, and a record of every call."""

    def __init__(self):
        super().__init__()
        self.anchor = nn.Parameter(torch.zeros(()))  # a parameter, so a loop may ask for its device
        self.calls = []

    def forward(self, ids):
        if ids.shape[1] > RULE_CONTEXT:
            raise ValueError(f"{ids.shape[1]} tokens exceed this model's context of {RULE_CONTEXT}")
        self.calls.append({"fed": int(ids.shape[1]), "grad": torch.is_grad_enabled(), "training": self.training})
        return rule_logits(ids.cpu()).to(ids.device) + self.anchor


class CachedRule(Rule):
    """A stand-in for ``CachedGPTModel``: one "block" whose cache holds the token ids seen, as keys
    and values of shape (batch, 1, past, 1)."""

    def forward(self, ids, caches=None):
        past = torch.zeros(ids.shape[0], 1, 0, 1) if caches is None else caches[0][0]
        seen = torch.cat([past.reshape(ids.shape[0], -1).to(ids.device, ids.dtype), ids], dim=1)
        if seen.shape[1] > RULE_CONTEXT:
            raise ValueError(f"{past.shape[2]} cached + {ids.shape[1]} new tokens exceed this model's context of "
                             f"{RULE_CONTEXT}")
        self.calls.append({"fed": int(ids.shape[1]), "past": int(past.shape[2]), "grad": torch.is_grad_enabled(),
                           "training": self.training})
        logits = rule_logits(seen.cpu())[:, -ids.shape[1]:].to(ids.device) + self.anchor
        cache = seen[:, None, :, None].float()
        return logits, [(cache, cache.clone())]


@PROBES.add("s10.generate")
def generate(lab, device):
    def run(name, model, train, dtype=RULE_PROMPT.dtype):
        model = model.to(device).train(train)
        idx = RULE_PROMPT.to(device, dtype)
        out = getattr(lab.gpt, name)(model, idx, RULE_NEW, RULE_CONTEXT)
        return {"tokens": plain(out, f"what {name} returned"), "calls": model.calls, "training": model.training,
                "prompt_after": plain(idx, "the prompt")}

    return {"greedy": lab.attempt(run, "generate_greedy", Rule(), False),
            "greedy_train": lab.attempt(run, "generate_greedy", Rule(), True),
            # an int32 prompt: idx's dtype comes back, or int64 (the book's torch.cat promotes), both integers
            "greedy_int32": lab.attempt(run, "generate_greedy", Rule(), False, torch.int32),
            "cached": lab.attempt(run, "generate_cached", CachedRule(), False),
            "cached_train": lab.attempt(run, "generate_cached", CachedRule(), True)}


# ---------------------------------------------------------------- training

TRAIN_STEPS, TRAIN_LR, TRAIN_VOCAB, TRAIN_BATCH, TRAIN_TOKENS = 4, 0.5, 27, 4, 16


class KitLanguageModel(nn.Module):
    """The kit's own small language model (an embedding, one causal mixing of the tokens so far, a
    head): ``train_steps`` is judged on it, apart from the student's ``GPTModel``. It records the mode
    (``self.training``) of every forward, which s10.train.mode judges."""

    def __init__(self):
        super().__init__()
        self.embed = nn.Embedding(TRAIN_VOCAB, 8)
        self.head = nn.Linear(8, TRAIN_VOCAB)
        load_by_name(self, {"embed.weight": randn(TRAIN_VOCAB, 8, seed=131), "head.weight": randn(TRAIN_VOCAB, 8,
                                                                                                   seed=132),
                            "head.bias": randn(TRAIN_VOCAB, seed=133, scale=0.1)})
        self.modes = []

    def forward(self, ids):
        self.modes.append(self.training)
        x = self.embed(ids)
        so_far = x.cumsum(1) / torch.arange(1, ids.shape[1] + 1, device=ids.device)[:, None]
        return self.head(x + so_far)


def floats(losses):
    """What ``train_steps`` returned, as a float64 tensor, if it is the contract's list of Python floats."""
    if not isinstance(losses, (list, tuple)) or not all(isinstance(v, (int, float)) for v in losses):
        kind = type(losses).__name__ if not isinstance(losses, (list, tuple)) else \
            f"{type(losses).__name__} of {', '.join(sorted({type(v).__name__ for v in losses}))}"
        raise ProbeError(f"train_steps should return a list of Python floats (loss.item()), but returned a {kind}")
    return torch.tensor([float(v) for v in losses], dtype=torch.float64)


class SGD(torch.optim.SGD):
    """torch's SGD (no momentum, no weight decay: ``p -= lr * p.grad``), with a step written out:
    torch's own imports ``torch._dynamo`` at its first call, only to break a compiled graph there.
    The same floats (one add per element), and still a ``torch.optim.SGD`` to the student's code."""

    @torch.no_grad()
    def step(self, closure=None):
        loss = None
        if closure is not None:
            with torch.enable_grad():
                loss = closure()
        for group in self.param_groups:
            for p in group["params"]:
                if p.grad is not None:
                    p.add_(p.grad, alpha=-group["lr"])
        return loss


def train_batches():
    texts = (tiny_gpt.repeats(TRAIN_BATCH, seed=s, length=TRAIN_TOKENS + 1) for s in (31, 32))
    return [(t[:, :-1], t[:, 1:]) for t in texts]


@PROBES.add("s10.train", golden=True)
def train(lab, device):
    def run():
        model = KitLanguageModel().to(device).eval()
        optimizer = SGD(model.parameters(), lr=TRAIN_LR)
        batches = [(x.to(device), y.to(device)) for x, y in train_batches()]
        losses = lab.gpt.train_steps(model, batches, optimizer, TRAIN_STEPS)
        modes, after = list(model.modes), model.training
        model.eval()
        with torch.no_grad():
            logits = plain(model(batches[0][0]), "the logits after training")
        return {"losses": lab.attempt(floats, losses), "modes": modes, "after": after, "logits": logits}

    return lab.attempt(run)
