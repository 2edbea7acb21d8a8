"""Stage 7 probes: scaled dot-product attention, masks, multi-headed attention, the feed-forward
network, positional encoding, encoder and decoder layers.

Most of these return the student's outputs for known weights and inputs only: the judges
compare them with PyTorch's own layers (``autograder.public.oracles``), which run in the grading
process, never beside the student's code. Inputs and weights are made here, by seed, and the
judges make the same ones.
"""
import torch
import torch.nn as nn

from .common import (DROPOUT_P, DROPOUT_TOKENS, ProbeError, Probes, device_report, dropout_pair, dropout_report,
                     dropout_weights, eval_report, gradient_report, leak_report, linear_weights,
                     load_by_name, padding_report, plain, raised, randn)

PROBES = Probes()

D, H, D_FF = 8, 2, 16

# --- scaled_dot_product_attention -----------------------------------------------------------

Q4, K4, V4 = randn(2, 2, 4, 4, seed=70), randn(2, 2, 6, 4, seed=71), randn(2, 2, 6, 3, seed=72)  # d_v != d_k
SDPA_CASES = {
    "none": (Q4, K4, V4, None),
    "padding": (Q4, K4, V4, torch.tensor([[1, 1, 1, 1, 0, 0], [1, 1, 1, 1, 1, 1]]).view(2, 1, 1, 6)),
    "pattern": (Q4, K4, V4, torch.tril(torch.ones(4, 6, dtype=torch.long), diagonal=2).view(1, 1, 4, 6)),
    "no_heads": (Q4[:, 0], K4[:, 0], V4[:, 0], torch.tensor([[1, 0, 1, 1, 0, 1]]).view(1, 1, 6)),
    # query 2 of the first batch sees no key at all
    "all_hidden": (Q4, K4, V4, torch.ones(2, 1, 4, 6, dtype=torch.long).index_put_(
        (torch.tensor([0]), torch.tensor([0]), torch.tensor([2])), torch.tensor(0))),
}
SDPA_DROPOUT = {"n": 32, "batch": 8}
V_DROPOUT = randn(SDPA_DROPOUT["batch"], SDPA_DROPOUT["n"], 3, seed=73)


def _pair(result, what):
    if not isinstance(result, tuple) or len(result) != 2:
        raise ProbeError(f"{what} should return a pair (output, weights), got {type(result).__name__}")
    return plain(result[0], f"the output of {what}"), plain(result[1], f"the weights of {what}")


@PROBES.add("s7.sdpa")
def sdpa(lab, device):
    def run(q, k, v, mask):
        result = lab.transformer.scaled_dot_product_attention(
            q.to(device).clone(), k.to(device).clone(), v.to(device).clone(),
            mask=None if mask is None else mask.to(device))
        return dict(zip(("out", "weights"), _pair(result, "scaled_dot_product_attention")))

    return {name: lab.attempt(run, *case) for name, case in SDPA_CASES.items()}


@PROBES.add("s7.sdpa.dropout")
def sdpa_dropout(lab, device):
    """Zero queries and keys: every weight is 1/n before dropout."""
    def run():
        n, b = SDPA_DROPOUT["n"], SDPA_DROPOUT["batch"]
        zeros = torch.zeros(b, n, 4, device=device)
        drop = nn.Dropout(DROPOUT_P).train()
        torch.manual_seed(0)
        result = lab.transformer.scaled_dot_product_attention(zeros, zeros.clone(), V_DROPOUT.to(device).clone(),
                                                              dropout=drop)
        out, weights = _pair(result, "scaled_dot_product_attention(..., dropout=nn.Dropout(p))")
        return {"out": out, "weights": weights}

    return lab.attempt(run)


# --- masks ----------------------------------------------------------------------------------

TOKENS = torch.tensor([[5, 3, 7, 0, 0], [4, 2, 2, 9, 0], [0, 6, 2, 1, 8]])
PAD_IDS = (0, 2)
SUBSEQUENT_SIZES = (1, 4)


@PROBES.add("s7.masks")
def masks(lab, device):
    def pad(pad_id):
        return plain(lab.transformer.padding_mask(TOKENS.to(device).clone(), pad_id), f"padding_mask(tokens, {pad_id})")

    def subsequent(size):
        return plain(lab.transformer.subsequent_mask(size), f"subsequent_mask({size})")

    return {"padding": {str(p): lab.attempt(pad, p) for p in PAD_IDS},
            "subsequent": {str(n): lab.attempt(subsequent, n) for n in SUBSEQUENT_SIZES}}


# --- MultiHeadedAttention -------------------------------------------------------------------

def mha_weights(seed, prefix="", d=D):
    weights = {}
    for i in range(4):
        weights.update(linear_weights(f"{prefix}linears.{i}", d, d, seed + 10 * i, bias=True))
    return weights


def mha(lab, h=H, d=D, dropout=0.0):
    return lab.transformer.MultiHeadedAttention(h, d, dropout)


# The attention's four projections, in every layer that holds one: s7.mha.structure judges which have a
# bias, and every other check spares them (``load_by_name``), so that one slip costs one check.
MHA_LINEARS = tuple(f"linears.{i}" for i in range(4))


X5 = randn(2, 5, D, seed=74)
XQ, MEMORY = randn(2, 3, D, seed=75), randn(2, 6, D, seed=76)
PAD5 = torch.tensor([[1, 1, 1, 1, 1], [1, 1, 1, 0, 0]])
PAD6 = torch.tensor([[1, 1, 1, 1, 1, 1], [1, 1, 1, 1, 0, 0]])
CAUSAL5 = PAD5.unsqueeze(1) * torch.tril(torch.ones(5, 5, dtype=torch.long))  # (batch, 5, 5)
# name: (heads, weight seed, query, key/value, mask)
MHA_CASES = {
    "self": (H, 700, X5, X5, None),
    "self_padded": (H, 700, X5, X5, PAD5.unsqueeze(1)),
    "self_causal": (H, 700, X5, X5, CAUSAL5),
    "cross": (H, 710, XQ, MEMORY, PAD6.unsqueeze(1)),
    "four_heads": (4, 720, X5, X5, None),
}
MHA_LABELS = {"self": "self-attention, no mask", "self_padded": "self-attention, (batch, 1, seq) padding mask",
              "self_causal": "self-attention, (batch, seq, seq) causal and padding mask",
              "cross": "cross-attention, 3 queries over 6 keys, padded keys", "four_heads": "4 heads"}


def _attend(module, device, query, kv, mask):
    module = module.to(device).eval()
    kv = kv.to(device)
    return plain(module(query.to(device).clone(), kv.clone(), kv.clone(), None if mask is None else mask.to(device)),
                 "the output of forward")


@PROBES.add("s7.mha.oracle")
def mha_oracle(lab, device):
    def run(h, seed, query, kv, mask):
        return _attend(load_by_name(mha(lab, h), mha_weights(seed), spare_biases=MHA_LINEARS), device, query, kv, mask)

    return {name: lab.attempt(run, *case) for name, case in MHA_CASES.items()}


@PROBES.add("s7.mha.cross")
def mha_cross(lab, device):
    """Queries from one sequence, keys and values from another of a different length."""
    def run():
        module = load_by_name(mha(lab), mha_weights(730), spare_biases=MHA_LINEARS)
        moved_query = XQ.clone()
        moved_query[:, 1] += randn(2, D, seed=77, scale=3.0)
        other_memory = MEMORY + randn(2, 6, D, seed=78)
        return {"base": _attend(module, device, XQ, MEMORY, None),
                "query_row_1_changed": _attend(module, device, moved_query, MEMORY, None),
                "memory_changed": _attend(module, device, XQ, other_memory, None)}

    return lab.attempt(run)


ALL_PADDED5 = torch.tensor([[1, 1, 1, 1, 1], [0, 0, 0, 0, 0]])


@PROBES.add("s7.mha.padding")
def mha_padding(lab, device):
    def run():
        module = load_by_name(mha(lab), mha_weights(740), spare_biases=MHA_LINEARS)
        return padding_report(lambda x, mask: _attend(module, device, x, x, mask), X5, PAD5 == 0,
                              PAD5.unsqueeze(1), ALL_PADDED5.unsqueeze(1))

    return lab.attempt(run)


@PROBES.add("s7.mha.structure")
def mha_structure(lab, device):
    return lab.attempt(lambda: {name: list(p.shape) for name, p in mha(lab, h=2, d=8).named_parameters()})


@PROBES.add("s7.mha.divisibility")
def mha_divisibility(lab, device):
    return lab.attempt(raised, lambda: mha(lab, h=3, d=8))


class SelfAttend(nn.Module):
    """``attention(x, x, x, mask)`` as a one-input module, for the kit's shared measurements."""

    WRAPS = "attention"  # the student's layer: what feedback names (``common.load_by_name``)

    def __init__(self, attention):
        super().__init__()
        self.attention = attention

    def forward(self, x, mask=None):
        return self.attention(x, x, x, mask)


@PROBES.add("s7.mha.dropout")
def mha_dropout(lab, device):
    T = DROPOUT_TOKENS

    def run():
        weights = dropout_weights(T, prefix="linears.", names=("0", "1", "2"), square=True)
        weights.update({"linears.3.weight": torch.eye(T + 1), "linears.3.bias": torch.zeros(T + 1)})
        module = load_by_name(mha(lab, h=1, d=T + 1, dropout=DROPOUT_P), weights, spare_biases=MHA_LINEARS)
        causal = torch.tril(torch.ones(1, T, T, dtype=torch.long))
        return dropout_report(SelfAttend(module), device, width=T + 1, mask=causal)

    return {"out": lab.attempt(run)}


# --- PositionwiseFeedForward ----------------------------------------------------------------

def ffn_weights(seed, prefix="", d=D, d_ff=D_FF):
    weights = linear_weights(f"{prefix}w_1", d, d_ff, seed, bias=True)
    weights.update(linear_weights(f"{prefix}w_2", d_ff, d, seed + 10, bias=True))
    return weights


@PROBES.add("s7.ffn.known_weights", golden=True)
def ffn_known(lab, device):
    def run(d_ff):
        module = lab.transformer.PositionwiseFeedForward(D, d_ff, 0.0)
        load_by_name(module, ffn_weights(750, d_ff=d_ff))
        return plain(module.to(device).eval()(X5.to(device).clone()), "the output of forward")

    return {"d_ff_16": lab.attempt(run, 16), "d_ff_32": lab.attempt(run, 32)}


X_FFN_DROPOUT = randn(4, 50, D, seed=83)
FFN_DROPOUT_BIAS = 0.5


def ffn_dropout_weights():
    """w_2 = identity with bias 0.5 (d_ff = d_model): the output minus 0.5 is what w_2 was given."""
    weights = linear_weights("w_1", D, D, 760, bias=True)
    weights.update({"w_2.weight": torch.eye(D), "w_2.bias": torch.full((D,), FFN_DROPOUT_BIAS)})
    return weights


@PROBES.add("s7.ffn.dropout")
def ffn_dropout(lab, device):
    def run():
        module = load_by_name(lab.transformer.PositionwiseFeedForward(D, D, DROPOUT_P), ffn_dropout_weights())
        module.to(device).train()
        torch.manual_seed(0)
        return plain(module(X_FFN_DROPOUT.to(device).clone()), "the output of forward in train mode")

    return {"out": lab.attempt(run)}


@PROBES.add("s7.ffn.structure")
def ffn_structure(lab, device):
    def run():
        module = lab.transformer.PositionwiseFeedForward(6, 24, 0.1)
        layers = {n: getattr(module, n, None) for n in ("w_1", "w_2")}
        return {n: list(layer.weight.shape) if isinstance(layer, nn.Linear) else None for n, layer in layers.items()}

    return lab.attempt(run)


# --- PositionalEncoding ---------------------------------------------------------------------

PE_D, PE_LEN = 16, 60
X_PE = randn(2, 10, PE_D, seed=79)


def pe_buffer(module):
    pe = getattr(module, "pe", None)
    if not isinstance(pe, torch.Tensor):
        raise ProbeError("PositionalEncoding has no tensor attribute named 'pe'")
    return pe


X_PE_DROPOUT = randn(4, 50, PE_D, seed=82)


@PROBES.add("s7.pe.table")
def pe_table(lab, device):
    def make(dropout=0.0):
        return lab.transformer.PositionalEncoding(PE_D, dropout, max_len=PE_LEN)

    def layout():
        module = make()
        return {"buffers": sorted(n for n, _ in module.named_buffers()),
                "parameters": sorted(n for n, _ in module.named_parameters()),
                "state_dict": sorted(module.state_dict().keys())}

    def default_length():
        return list(pe_buffer(lab.transformer.PositionalEncoding(6, 0.1)).shape)

    def forward(x):
        module = make(0.3).to(device).eval()
        return plain(module(x.to(device).clone()), "the output of forward")

    return {"table": lab.attempt(lambda: plain(pe_buffer(make()).detach(), "PositionalEncoding.pe")),
            "layout": lab.attempt(layout), "default_length": lab.attempt(default_length),
            "forward": lab.attempt(forward, X_PE)}


@PROBES.add("s7.pe.dropout")
def pe_dropout(lab, device):
    """x + pe, with and without dropout (``common.dropout_pair``): a table of another layout, which
    s7.pe.formula prices, costs nothing here."""
    return lab.attempt(lambda: dropout_pair(lab.transformer.PositionalEncoding(PE_D, DROPOUT_P, max_len=PE_LEN),
                                            X_PE_DROPOUT, device))


@PROBES.add("s7.pe.device")
def pe_device(lab, device):
    return lab.attempt(device_report, lab, lambda: lab.transformer.PositionalEncoding(PE_D, 0.0, max_len=PE_LEN),
                       {}, device, PE_D)


# --- EncoderLayer and DecoderLayer ----------------------------------------------------------

def norm_weights(name, seed, d=D):
    return {f"{name}.weight": 1 + randn(d, seed=seed, scale=0.3), f"{name}.bias": randn(d, seed=seed + 1, scale=0.1)}


def encoder_weights(seed):
    weights = {**mha_weights(seed, "self_attn."), **ffn_weights(seed + 50, "feed_forward.")}
    for i in (1, 2):
        weights.update(norm_weights(f"norm{i}", seed + 60 + 2 * i))
    return weights


def decoder_weights(seed):
    weights = {**mha_weights(seed, "self_attn."), **mha_weights(seed + 100, "src_attn."),
               **ffn_weights(seed + 50, "feed_forward.")}
    for i in (1, 2, 3):
        weights.update(norm_weights(f"norm{i}", seed + 60 + 2 * i))
    return weights


def encoder(lab, dropout=0.0):
    return lab.transformer.EncoderLayer(D, H, D_FF, dropout)


def decoder(lab, dropout=0.0):
    return lab.transformer.DecoderLayer(D, H, D_FF, dropout)


ENCODER_CASES = {"no_mask": None, "padded": PAD5.unsqueeze(1)}


class KitAttention(nn.Module):
    """The kit's own ``MultiHeadedAttention`` of known ``weights`` (under ``prefix``), by PyTorch's own
    pieces: put into the student's layer by the oracle probes, so that those checks judge how the layer
    wires its sublayers, and a slip inside the attention costs the attention's own checks alone."""

    def __init__(self, weights, prefix, heads=H):
        super().__init__()
        self.weights, self.prefix, self.heads = weights, prefix, heads

    def forward(self, query, key, value, mask=None):
        w = {name: t.to(query) for name, t in self.weights.items() if name.startswith(self.prefix)}
        batch, d = query.shape[0], query.shape[-1]

        def project(i, t):
            return nn.functional.linear(t, w[f"{self.prefix}linears.{i}.weight"], w[f"{self.prefix}linears.{i}.bias"])

        q, k, v = (project(i, t).view(batch, -1, self.heads, d // self.heads).transpose(1, 2)
                   for i, t in enumerate((query, key, value)))
        scores = q @ k.transpose(-2, -1) / (d // self.heads) ** 0.5
        if mask is not None:
            scores = scores.masked_fill(mask.unsqueeze(1) == 0, -1e9)
        return project(3, (scores.softmax(dim=-1) @ v).transpose(1, 2).reshape(batch, -1, d))


class KitFeedForward(nn.Module):
    """The kit's own ``PositionwiseFeedForward`` of known ``weights``: w_2(relu(w_1(x)))."""

    def __init__(self, weights, prefix):
        super().__init__()
        self.weights, self.prefix = weights, prefix

    def forward(self, x):
        w = {name.removeprefix(self.prefix): t.to(x) for name, t in self.weights.items()
             if name.startswith(self.prefix)}
        hidden = torch.relu(nn.functional.linear(x, w["w_1.weight"], w["w_1.bias"]))
        return nn.functional.linear(hidden, w["w_2.weight"], w["w_2.bias"])


def with_kit_sublayers(layer, weights, attentions):
    """The student's ``layer`` with the kit's own attention (each of ``attentions``) and feed-forward
    network of known ``weights``, and its own norms loaded with theirs: the oracle checks then judge the
    layer's wiring (post-norm, the residuals, which input feeds which attention) against PyTorch's, and
    the sublayers are priced by their own checks (``s7.mha.*``, ``s7.ffn.*``), once."""
    for name in attentions:
        setattr(layer, name, KitAttention(weights, f"{name}."))
    layer.feed_forward = KitFeedForward(weights, "feed_forward.")
    return load_by_name(layer, {n: t for n, t in weights.items() if n.startswith("norm")})


@PROBES.add("s7.encoder.oracle")
def encoder_oracle(lab, device):
    def run(mask):
        module = with_kit_sublayers(encoder(lab), encoder_weights(800), ("self_attn",)).to(device).eval()
        return plain(module(X5.to(device).clone(), None if mask is None else mask.to(device)), "the output of forward")

    return {name: lab.attempt(run, mask) for name, mask in ENCODER_CASES.items()}


@PROBES.add("s7.encoder.eval")
def encoder_eval(lab, device):
    return lab.attempt(eval_report, lambda p: encoder(lab, p), encoder_weights(810), device, d_in=D,
                   spare_biases=MHA_LINEARS)


TGT = randn(2, 4, D, seed=80)
TGT_PAD = torch.tensor([[1, 1, 1, 1], [1, 1, 1, 0]])
TGT_MASK = TGT_PAD.unsqueeze(1) * torch.tril(torch.ones(4, 4, dtype=torch.long))  # padding & subsequent
DECODER_CASES = {"masked": (PAD6.unsqueeze(1), TGT_MASK), "no_masks": (None, None)}


def _decode(module, device, x, memory, src_mask, tgt_mask):
    def on(t):
        return None if t is None else t.to(device).clone()

    return plain(module.to(device).eval()(on(x), on(memory), on(src_mask), on(tgt_mask)), "the output of forward")


@PROBES.add("s7.decoder.oracle")
def decoder_oracle(lab, device):
    def run(src_mask, tgt_mask):
        module = with_kit_sublayers(decoder(lab), decoder_weights(820), ("self_attn", "src_attn"))
        return _decode(module, device, TGT, MEMORY, src_mask, tgt_mask)

    return {name: lab.attempt(run, *masks) for name, masks in DECODER_CASES.items()}


@PROBES.add("s7.decoder.cross_source")
def decoder_cross_source(lab, device):
    """What the decoder hands to ``src_attn``: queries from itself, keys and values from memory."""
    def run():
        module = load_by_name(decoder(lab), decoder_weights(830), spare_biases=MHA_LINEARS)
        src_attn = getattr(module, "src_attn", None)
        if not isinstance(src_attn, nn.Module):
            raise ProbeError("DecoderLayer has no module named src_attn")
        calls = []

        def record(_, args, kwargs):
            names = ("query", "key", "value")
            given = {**dict(zip(names, args)), **{k: v for k, v in kwargs.items() if k in names}}
            calls.append({k: plain(v, f"the {k} passed to src_attn") for k, v in given.items()})

        handle = src_attn.register_forward_pre_hook(record, with_kwargs=True)
        try:  # what src_attn was given is worth reporting even when the layer crashes afterwards
            base = lab.attempt(_decode, module, device, TGT, MEMORY, None, None)
        finally:
            handle.remove()
        other = lab.attempt(_decode, module, device, TGT, MEMORY + randn(2, 6, D, seed=81), None, None)
        return {"calls": calls, "base": base, "memory_changed": other}

    return lab.attempt(run)


class WithMemory(nn.Module):
    """A decoder layer as a one-input module: fixed encoder memory, the subsequent mask for x."""

    WRAPS = "layer"  # the student's layer: what feedback names (``common.load_by_name``)

    def __init__(self, layer):
        super().__init__()
        self.layer = layer

    def forward(self, x):
        size = x.shape[1]
        tgt_mask = torch.tril(torch.ones(1, size, size, dtype=torch.bool, device=x.device))
        return self.layer(x, MEMORY[:1].expand(x.shape[0], -1, -1).to(x.device), None, tgt_mask)


@PROBES.add("s7.decoder.leak")
def decoder_leak(lab, device):
    def module():
        return WithMemory(load_by_name(decoder(lab), decoder_weights(840), spare_biases=MHA_LINEARS))

    return lab.attempt(lambda: leak_report(module(), D, 5, device))


@PROBES.add("s7.decoder.eval")
def decoder_eval(lab, device):
    weights = {f"layer.{name}": value for name, value in decoder_weights(870).items()}
    return lab.attempt(eval_report, lambda p: WithMemory(decoder(lab, p)), weights, device, d_in=D,
                   spare_biases=MHA_LINEARS)


def constant_sublayers(weights):
    """Every sublayer's output made a constant (its output bias), whatever the attention weights and
    hidden units: value projections and w_1 are zero, w_1's bias negative. Then in train mode only
    the dropout on each sublayer's output can change the layer's output."""
    changed = dict(weights)
    for name, value in weights.items():
        if ".linears.2." in name or ".w_1.weight" in name:
            changed[name] = torch.zeros_like(value)
        elif ".w_1.bias" in name:
            changed[name] = -torch.ones_like(value)
    return changed


@PROBES.add("s7.layers.sublayer_dropout")
def sublayer_dropout(lab, device):
    def run(layer, weights):
        module = load_by_name(layer, constant_sublayers(weights), spare_biases=MHA_LINEARS).to(device)
        x = X5.to(device)
        out = {}
        for mode in ("eval", "train"):
            module.train(mode == "train")
            torch.manual_seed(0)
            out[mode] = plain(module(x.clone()), f"the output of forward in {mode} mode")
        return out

    return {"EncoderLayer": lab.attempt(lambda: run(encoder(lab, DROPOUT_P), encoder_weights(880))),
            "DecoderLayer": lab.attempt(lambda: run(WithMemory(decoder(lab, DROPOUT_P)),
                                                {f"layer.{n}": v for n, v in decoder_weights(890).items()}))}


@PROBES.add("s7.gradients")
def gradients(lab, device):
    def enc():
        return gradient_report(encoder(lab).to(device), X5.to(device))

    def dec():
        grads = gradient_report(WithMemory(decoder(lab)).to(device), X5.to(device))
        return {name.removeprefix("layer."): ok for name, ok in grads.items()}

    return {"EncoderLayer": lab.attempt(enc), "DecoderLayer": lab.attempt(dec)}
