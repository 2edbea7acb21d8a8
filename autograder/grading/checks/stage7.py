"""Stage 7 judges: most expected values come from PyTorch's own layers (``autograder.public.oracles``)."""
from functools import lru_cache

import torch

from ...probes.common import DROPOUT_P
from ...probes.stage7 import (D_FF, DECODER_CASES, ENCODER_CASES, FFN_DROPOUT_BIAS, MEMORY, MHA_CASES, MHA_LABELS, PAD5,
                              PAD_IDS, PE_D, PE_LEN, SDPA_CASES, SDPA_DROPOUT, SUBSEQUENT_SIZES, TGT, TOKENS, V_DROPOUT,
                              X5, X_FFN_DROPOUT, X_PE, XQ, H, decoder_weights, encoder_weights,
                              ffn_dropout_weights, mha_weights)
from ...public import oracles
from ..families import layer
from ..judging import (ALL_HIDDEN_HINT, LAYER, check_value_error, check_gradients, check_inverted_dropout,
                       check_padding, close, expect, expect_close, expect_finite, expect_golden, expect_parameters,
                       expect_rows_sum_to_one, get, same)
from ..pictures import encoding_table, moved_and_left
from ..registry import NUMERIC, VISIBLE, Checks, Fail

CHECKS = Checks(7)
CHECKS.look("scaled_dot_product_attention", "lambda x: scaled_dot_product_attention(x, x, x)[1]")

ORACLE_ATOL = 1e-5  # float32 against float32 in another order of operations; bugs are off by far more


@lru_cache(maxsize=None)  # the same cases, judged for every submission: PyTorch runs once per case
def oracle(layer, case):
    """What PyTorch's own layer gives for one of the probes' cases."""
    if layer == "attention":
        return oracles.attention(*SDPA_CASES[case])
    if layer == "multihead":
        heads, seed, query, kv, mask = MHA_CASES[case]
        return oracles.multihead(mha_weights(seed), heads, query, kv, mask)
    if layer == "encoder":
        return oracles.encoder(encoder_weights(800), H, D_FF, X5, ENCODER_CASES[case])
    return oracles.decoder(decoder_weights(820), H, D_FF, TGT, MEMORY, *DECODER_CASES[case])


def visible_rows(mask, shape):
    """Bool over (..., n_q): rows of attention that have at least one visible key."""
    if mask is None:
        return torch.ones(shape[:-1], dtype=torch.bool)
    return (mask != 0).expand(shape).any(dim=-1)


@CHECKS.add("s7.sdpa.oracle", points=3, probe="s7.sdpa", devices=NUMERIC,
            title="scaled_dot_product_attention matches torch.nn.functional.scaled_dot_product_attention")
def sdpa_oracle(obs, ctx):
    for name, (q, k, v, mask) in SDPA_CASES.items():
        out = get(obs, name, "out")
        expected = oracle("attention", name)
        rows = visible_rows(mask, q.shape[:-1] + k.shape[-2:-1])
        expect(out.shape == expected.shape, f"scaled_dot_product_attention output has shape {tuple(out.shape)} for "
               f"query {tuple(q.shape)}, key {tuple(k.shape)}, value {tuple(v.shape)}; "
               f"expected {tuple(expected.shape)}")
        expect_close(out[rows], expected[rows], f"scaled_dot_product_attention output ({name.replace('_', ' ')} case; "
                     "compared with F.scaled_dot_product_attention)", atol=ORACLE_ATOL)


@CHECKS.add("s7.sdpa.weights", points=2, probe="s7.sdpa", devices=NUMERIC,
            title="scaled_dot_product_attention returns softmax(Q K^T / sqrt(d_k)) with hidden keys at 0 and no nan")
def sdpa_weights(obs, ctx):
    for name, (q, k, v, mask) in SDPA_CASES.items():
        weights = get(obs, name, "weights")
        what = f"the weights returned by scaled_dot_product_attention ({name.replace('_', ' ')} case)"
        shape = q.shape[:-1] + k.shape[-2:-1]
        expect(tuple(weights.shape) == tuple(shape),
               f"{what} have shape {tuple(weights.shape)}, expected {tuple(shape)}")
        expect_finite(weights, what, ALL_HIDDEN_HINT if name == "all_hidden" else "")
        expect_finite(get(obs, name, "out"), f"the output of scaled_dot_product_attention ({name} case)",
                      ALL_HIDDEN_HINT if name == "all_hidden" else "")
        rows = visible_rows(mask, shape)
        expect_rows_sum_to_one(weights[rows], what)
        scores = (q.double() @ k.double().transpose(-2, -1)) / q.shape[-1] ** 0.5
        if mask is not None:
            scores = scores.masked_fill(mask == 0, -torch.inf)
        expected = torch.softmax(scores, dim=-1)
        expect_close(weights[rows], expected[rows], what)


@CHECKS.add("s7.sdpa.dropout", points=1, probe="s7.sdpa.dropout", devices=NUMERIC,
            title=f"scaled_dot_product_attention applies dropout (p={DROPOUT_P}) to the weights and returns those")
def sdpa_dropout(obs, ctx):
    r = get(obs)
    n, batch = SDPA_DROPOUT["n"], SDPA_DROPOUT["batch"]
    weights, out = r["weights"].double(), r["out"].double()
    expect(tuple(weights.shape) == (batch, n, n), f"the weights returned by scaled_dot_product_attention for {n} "
           f"queries and keys in a batch of {batch} have shape {tuple(weights.shape)}, expected {(batch, n, n)}")
    expect_finite(weights, "the weights returned by scaled_dot_product_attention with dropout")
    kept = weights != 0
    dropped = 1 - float(kept.double().mean())
    used = weights @ V_DROPOUT.double()
    consistent = close(out, used, atol=1e-5, rtol=0)
    expect(consistent or dropped > 0.005, "the output of scaled_dot_product_attention with dropout is not the "
           "returned weights @ value: return the weights after dropout, the ones the output was made with")
    expect(dropped > 0.005, "scaled_dot_product_attention(..., dropout=nn.Dropout(p)) zeroed no weight in train mode: "
           "apply dropout to the weights after the softmax")
    scale = 1 / n / (1 - DROPOUT_P)
    expect(torch.allclose(weights[kept], torch.full_like(weights[kept], scale), rtol=1e-4, atol=0),
           f"with equal scores over {n} keys and dropout={DROPOUT_P}, each kept weight should be "
           f"1/{n}/(1-p) = {scale:.5f}; found {weights[kept].median().item():.5f}")
    expect(abs(dropped - DROPOUT_P) < 0.05,
           f"{dropped:.1%} of the weights were zeroed; about {DROPOUT_P:.0%} should be")
    expect_close(out, used, "the output of scaled_dot_product_attention with dropout, "
                 "compared with the returned weights @ value (return the weights after dropout, the ones used),",
                 reveal=True)


@CHECKS.add("s7.padding_mask", points=1, probe="s7.masks",
            title="padding_mask(tokens, pad_id) is a (batch, 1, seq) bool mask, True for real tokens")
def padding_mask(obs, ctx):
    for pad_id in PAD_IDS:
        mask = get(obs, "padding", str(pad_id))
        what = f"padding_mask(tokens, pad_id={pad_id}) for tokens of shape {tuple(TOKENS.shape)}"
        expected = (TOKENS != pad_id).unsqueeze(1)
        expect(tuple(mask.shape) == tuple(expected.shape), f"{what} has shape {tuple(mask.shape)}, expected "
               f"{tuple(expected.shape)} (the middle axis lets one mask serve every query)")
        expect(mask.dtype == torch.bool, f"{what} has dtype {mask.dtype}, expected torch.bool")
        wrong = (mask != expected).nonzero()
        expect(len(wrong) == 0, f"{what}: entry {tuple(wrong[0].tolist()) if len(wrong) else ''} is wrong; "
               "True where the token is not pad_id, False where it is")


@CHECKS.add("s7.subsequent_mask", points=1, probe="s7.masks",
            title="subsequent_mask(size) is (1, size, size), True on and below the diagonal")
def subsequent_mask(obs, ctx):
    for size in SUBSEQUENT_SIZES:
        mask = get(obs, "subsequent", str(size))
        what = f"subsequent_mask({size})"
        expect(tuple(mask.shape) == (1, size, size),
               f"{what} has shape {tuple(mask.shape)}, expected (1, {size}, {size})")
        expect(mask.dtype == torch.bool, f"{what} has dtype {mask.dtype}, expected torch.bool")
        expected = torch.tril(torch.ones(1, size, size, dtype=torch.bool))
        wrong = (mask != expected).nonzero()
        if len(wrong):
            _, i, j = wrong[0].tolist()
            raise Fail(f"{what}[0, {i}, {j}] is {bool(mask[0, i, j])}: position {i} "
                   + ("must see itself and the positions before it" if j <= i else "must not see a later position"))


def expect_oracle(obs, kind, labels, what, pytorch):
    """The layer's output on each case (``labels``: case -> its words) equals PyTorch's own layer's with the
    same weights (``oracle(kind, case)``)."""
    for name, label in labels.items():
        expect_close(get(obs, name), oracle(kind, name), f"{what} output ({label}; compared with {pytorch})",
                     atol=ORACLE_ATOL, dtype=LAYER)


@CHECKS.add("s7.mha.oracle", points=4, probe="s7.mha.oracle", devices=NUMERIC,
            title="MultiHeadedAttention matches nn.MultiheadAttention with the same weights (self, cross, masks)")
def mha_oracle(obs, ctx):
    expect_oracle(obs, "multihead", {name: MHA_LABELS[name] for name in MHA_CASES}, "MultiHeadedAttention",
                  "nn.MultiheadAttention")


@CHECKS.add("s7.mha.cross", points=2, probe="s7.mha.cross", devices=NUMERIC,
            title="MultiHeadedAttention cross-attention: n_q outputs, keys and values from the key/value inputs")
def mha_cross(obs, ctx):
    r = get(obs)
    base = r["base"]
    want = (XQ.shape[0], XQ.shape[1], XQ.shape[2])
    expect(tuple(base.shape) == want, f"MultiHeadedAttention(query of shape {tuple(XQ.shape)}, key and value of shape "
           f"{tuple(MEMORY.shape)}) has shape {tuple(base.shape)}, expected {want}: one output per query")
    others = [0, 2]
    changed = r["query_row_1_changed"]
    expect(changed.shape == base.shape, f"changing query 1 changed the shape of MultiHeadedAttention's output from "
           f"{tuple(base.shape)} to {tuple(changed.shape)}")
    moved = (changed[:, others].double() - base[:, others].double()).abs().max().item()
    expect(moved <= 1e-5, f"changing query 1 changed the outputs of queries 0 and 2 (by {moved:.3g}): keys and values "
           "must be computed from the key and value inputs, not from the query")
    expect(not close(r["memory_changed"], base), "changing the key/value input did not change the output: "
           "keys and values must come from the key and value inputs")


@CHECKS.add("s7.mha.padding", points=2, probe="s7.mha.padding", devices=NUMERIC,
            title="MultiHeadedAttention: padded keys change nothing, and all-padding rows give no nan")
def mha_padding(obs, ctx):
    check_padding(get(obs), PAD5 == 1, "MultiHeadedAttention")


@CHECKS.add("s7.mha.structure", points=1, probe="s7.mha.structure",
            title="MultiHeadedAttention's linears are four nn.Linear(d_model, d_model), with bias")
def mha_structure(obs, ctx):
    want = {f"linears.{i}.{kind}": [8, 8] if kind == "weight" else [8] for i in range(4) for kind in ("weight", "bias")}
    expect_parameters(get(obs), want, "MultiHeadedAttention(2, 8)", " (linears 0 to 2 project queries, keys and "
                      "values, linears[3] the heads put together)")


@CHECKS.add("s7.mha.divisibility", points=1, probe="s7.mha.divisibility",
            title="MultiHeadedAttention raises ValueError when h does not divide d_model", visibility=VISIBLE)
def mha_divisibility(obs, ctx):
    check_value_error(obs, "MultiHeadedAttention(3, 8)", "8 is not divisible by 3 heads")


layer(CHECKS, "s7.mha", "MultiHeadedAttention", dropout=1)


@CHECKS.add("s7.ffn.known_weights", points=2, probe="s7.ffn.known_weights", devices=NUMERIC,
            title="PositionwiseFeedForward computes w_2(relu(w_1(x))) with known weights")
def ffn_known(obs, ctx):
    expect_golden(obs, ctx.golden, {"d_ff_16": "d_ff=16", "d_ff_32": "d_ff=32"}, "PositionwiseFeedForward")


@CHECKS.add("s7.ffn.dropout", points=1, probe="s7.ffn.dropout", devices=NUMERIC,
            title=f"PositionwiseFeedForward applies dropout (p={DROPOUT_P}) between the ReLU and w_2")
def ffn_dropout(obs, ctx):
    w = ffn_dropout_weights()
    hidden = torch.relu(X_FFN_DROPOUT.double() @ w["w_1.weight"].double().T + w["w_1.bias"].double())
    given = get(obs, "out").double() - FFN_DROPOUT_BIAS  # w_2 is the identity plus this bias
    check_inverted_dropout(given, hidden, DROPOUT_P, "PositionwiseFeedForward",
                           "of relu(w_1(x)), the input of w_2,")


@CHECKS.add("s7.ffn.structure", points=1, probe="s7.ffn.structure",
            title="PositionwiseFeedForward widens to d_ff and back: w_1 = nn.Linear(d_model, d_ff), "
             "w_2 = nn.Linear(d_ff, d_model)")
def ffn_structure(obs, ctx):
    r = get(obs)
    for name, shape in (("w_1", [24, 6]), ("w_2", [6, 24])):
        expect(r[name] is not None, f"PositionwiseFeedForward.{name} should be an nn.Linear")
        expect(r[name] == shape, f"PositionwiseFeedForward(6, 24).{name}.weight has shape {tuple(r[name])}, expected "
               f"{tuple(shape)}: the inner layer is d_ff wide")


@CHECKS.add("s7.pe.formula", points=2, probe="s7.pe.table", devices=NUMERIC,
            title="PositionalEncoding.pe is the paper's table: sin on even dimensions, cos on odd ones")
def pe_formula(obs, ctx):
    pe = get(obs, "table")
    expect(pe.dim() in (2, 3) and tuple(pe.shape[-2:]) == (PE_LEN, PE_D) and pe.numel() == PE_LEN * PE_D,
           f"PositionalEncoding({PE_D}, 0.0, max_len={PE_LEN}).pe has shape {tuple(pe.shape)}, expected "
           f"(1, {PE_LEN}, {PE_D})")
    table = pe.reshape(PE_LEN, PE_D).double()
    expected = oracles.positional_table(PE_LEN, PE_D)
    bad = ((table - expected).abs() > 1e-4).nonzero()
    if len(bad):
        pos, dim = bad[0].tolist()
        kind = "sin" if dim % 2 == 0 else "cos"
        raise Fail(f"pe[0, {pos}, {dim}] is {table[pos, dim].item():.4f}, but dimension {dim} is {kind}(pos / "
               f"10000^({dim - dim % 2}/{PE_D})) = {expected[pos, dim].item():.4f} at position {pos}")
    length = get(obs, "default_length")
    expect(length[-2:] == [5000, 6], f"PositionalEncoding(6, 0.1).pe has shape {tuple(length)}; "
           "max_len defaults to 5000")


@CHECKS.add("s7.pe.buffer", points=2, probe="s7.pe.table",
            title="PositionalEncoding keeps pe as a buffer in the state_dict, not as a learnt parameter")
def pe_buffer(obs, ctx):
    r = get(obs, "layout")
    names = ", ".join(map(str, r["parameters"]))
    expect(not r["parameters"], f"PositionalEncoding has parameters ({names}); the table is "
           "fixed, so register it with register_buffer, not as an nn.Parameter that the optimiser would change")
    expect("pe" in r["buffers"], "PositionalEncoding.pe is not a registered buffer (self.register_buffer('pe', ...))")
    expect("pe" in r["state_dict"], "PositionalEncoding.pe is not in the state_dict (persistent=False?)")


@CHECKS.add("s7.pe.forward", points=1, probe="s7.pe.table", devices=NUMERIC,
            title="PositionalEncoding.forward adds pe[:, :seq] to x (eval mode: no dropout)")
def pe_forward(obs, ctx):
    out = get(obs, "forward")
    expected = X_PE.double() + oracles.positional_table(X_PE.shape[1], PE_D)
    by_batch = X_PE.double() + oracles.positional_table(X_PE.shape[0], PE_D).unsqueeze(1)  # pe[:x.size(0)]
    expect(not close(out, by_batch, atol=1e-4),
           "PositionalEncoding added position b's row of pe to every token of sequence b: it slices pe by "
           "x.size(0), which is the batch here, as sequence-first code does (x is (seq, batch, d_model) there). "
           "The contract's x is (batch, seq, d_model), so the positions are x.size(1): add pe[:, :x.size(1)]")
    expect_close(out, expected, f"PositionalEncoding({PE_D}, 0.3).eval()(x) for x of shape {tuple(X_PE.shape)}",
                 atol=1e-4, reveal=True, dtype=LAYER)


# The table may be a buffer or a frozen parameter here: which of the two is s7.pe.buffer's to price.
layer(CHECKS, "s7.pe", "PositionalEncoding", buffers=(), intermediate="x + pe", dropout=1, device=1,
      titles={"device": "PositionalEncoding moves to another device, pe included"})


@CHECKS.add("s7.encoder.oracle", points=3, probe="s7.encoder.oracle", devices=NUMERIC,
            title="EncoderLayer, holding the kit's own attention and feed-forward network, matches "
                  "nn.TransformerEncoderLayer (post-norm, ReLU, batch_first) with the same weights")
def encoder_oracle(obs, ctx):
    labels = {name: "no mask" if mask is None else "padding mask" for name, mask in ENCODER_CASES.items()}
    expect_oracle(obs, "encoder", labels, "EncoderLayer (with the kit's own self_attn and feed_forward in it, "
                  "so its wiring is at fault: post-norm, the residuals, the mask)", "nn.TransformerEncoderLayer")


layer(CHECKS, "s7.encoder", "EncoderLayer", eval=1)


@CHECKS.add("s7.decoder.oracle", points=3, probe="s7.decoder.oracle", devices=NUMERIC,
            title="DecoderLayer, holding the kit's own attentions and feed-forward network, matches "
                  "nn.TransformerDecoderLayer with the same weights (masked and unmasked)")
def decoder_oracle(obs, ctx):
    labels = {name: f"{name.replace('_', ' ')}; 4 target and 6 source positions" for name in DECODER_CASES}
    expect_oracle(obs, "decoder", labels, "DecoderLayer (with the kit's own self_attn, src_attn and feed_forward "
                  "in it, so its wiring is at fault: post-norm, the residuals, which input and mask each attention "
                  "gets)", "nn.TransformerDecoderLayer")


@CHECKS.add("s7.decoder.cross_source", points=2, probe="s7.decoder.cross_source", devices=NUMERIC,
            title="DecoderLayer's cross-attention takes its queries from the decoder and keys and values from memory")
def decoder_cross_source(obs, ctx):
    r = get(obs)
    calls = r["calls"]
    expect(len(calls) == 1, f"DecoderLayer.forward called src_attn {len(calls)} times, expected once"
           + (" (call the module, src_attn(...), not src_attn.forward(...))" if not calls else ""))
    given = calls[0]
    for name in ("key", "value"):
        t = given.get(name)
        expect(t is not None and same(t, MEMORY),
               f"the {name} passed to src_attn is not the encoder output (memory); in cross-attention keys and "
               "values come from the encoder, queries from the decoder")
    query = given.get("query")
    expect(query is not None and tuple(query.shape) == tuple(TGT.shape) and not same(query, MEMORY[:, :4]),
           f"the query passed to src_attn should be the decoder's states, shape {tuple(TGT.shape)}")
    expect(not close(get(r, "memory_changed"), get(r, "base")),
           "changing memory did not change DecoderLayer's output")


layer(CHECKS, "s7.decoder", "DecoderLayer", eval=1)


@CHECKS.add("s7.sublayer_dropout", points=2, probe="s7.layers.sublayer_dropout", devices=NUMERIC,
            title="EncoderLayer and DecoderLayer apply dropout to every sublayer's output in train mode")
def sublayer_dropout(obs, ctx):
    for name in ("EncoderLayer", "DecoderLayer"):
        r = get(obs, name)
        expect_finite(r["train"], f"{name} output in train mode")
        expect(not close(r["train"], r["eval"], atol=1e-4),
               f"{name} in train mode with dropout={DROPOUT_P} gave its eval-mode output, with weights that make "
               "every sublayer's output a constant, so that only the dropout on it could change anything: apply "
               "dropout to each sublayer's output before the residual sum, norm(x + dropout(sublayer(x)))")


layer(CHECKS, "s7.decoder", "DecoderLayer", no_leak=1,
      titles={"no_leak": "DecoderLayer with subsequent_mask never lets a position see a later one"})


@CHECKS.add("s7.gradients", points=1, probe="s7.gradients", devices=NUMERIC,
            title="gradients reach every parameter of EncoderLayer and DecoderLayer")
def gradients(obs, ctx):
    for name in ("EncoderLayer", "DecoderLayer"):
        check_gradients(get(obs, name), name)


CHECKS.pictures(draw={"s7.pe.table": lambda o: encoding_table(o, "PositionalEncoding"),
                      "s7.pe.device": lambda o: moved_and_left(o, "PositionalEncoding")})
