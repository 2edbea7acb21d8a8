"""Stage 7 self-checks: the Transformer's encoder and decoder layers (attention_lab/transformer.py).

Masks follow the file's convention: 1 (True) = may attend, 0 (False) = hidden. Most expected
values come from PyTorch's own layers holding *your* layers' weights: nn.MultiheadAttention,
nn.TransformerEncoderLayer and nn.TransformerDecoderLayer (post-norm, ReLU, dropout 0,
batch_first=True). Your layers run in eval mode, so their dropout is off.
"""
import math

import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F

from lab_checks import (expect, expect_close, expect_linear, expect_raises, expect_rows_sum_to_one, expect_shape, run,
                        student, tensor)
from oracles import copy_attention, pytorch_mask

pytestmark = pytest.mark.stage7

D_MODEL, H, D_FF = 8, 2, 32
PADDED = torch.tensor([[True] * 5, [True, True, True, False, False]])[:, None, :]  # (2, 1, 5): sentence 2 has 2 pads
FORMULA = "PE[pos, 2i] = sin(pos / 10000^(2i / d_model)), PE[pos, 2i+1] = cos(pos / 10000^(2i / d_model))"


def x(*shape, seed=0):
    return torch.randn(*shape, generator=torch.Generator().manual_seed(seed))


def causal(n):
    return torch.tril(torch.ones(1, n, n, dtype=torch.bool))


# --- your layers, checked, and PyTorch's with their weights -----------------------------------

def _projections(attention, what):
    """The four nn.Linear(D_MODEL, D_MODEL) of your MultiHeadedAttention: query, key, value, output."""
    expect(attention is not None,
           f"{what} is missing: create it in __init__ as MultiHeadedAttention(h, d_model, dropout)")
    linears = getattr(attention, "linears", None)
    expect(isinstance(linears, nn.ModuleList) and len(linears) == 4,
           f"{what}.linears should be an nn.ModuleList of four nn.Linear({D_MODEL}, {D_MODEL}) "
           f"(query, key, value, output), got {type(linears).__name__}")
    return [expect_linear(layer, D_MODEL, D_MODEL, f"{what}.linears[{i}]") for i, layer in enumerate(linears)]


def _norm(layer, name, what):
    norm, want = getattr(layer, name, None), f"nn.LayerNorm({D_MODEL})"
    expect(norm is not None, f"{what}.{name} is missing: create it in __init__ as {want}")
    expect(isinstance(norm, nn.LayerNorm), f"{what}.{name} should be an {want} (torch.nn's), "
           f"got {type(norm).__module__}.{type(norm).__qualname__}")
    expect(tuple(norm.normalized_shape) == (D_MODEL,) and norm.weight is not None and norm.bias is not None,
           f"{what}.{name} is {norm!r}, expected {want}")
    return norm


def _feed_forward(ffn, what):
    """w_1 and w_2 of your PositionwiseFeedForward(D_MODEL, D_FF)."""
    expect(ffn is not None,
           f"{what} is missing: create it in __init__ as PositionwiseFeedForward(d_model, d_ff, dropout)")
    return (expect_linear(getattr(ffn, "w_1", None), D_MODEL, D_FF, f"{what}.w_1"),
            expect_linear(getattr(ffn, "w_2", None), D_FF, D_MODEL, f"{what}.w_2"))


def _load_pytorch_layer(pytorch, yours, what, attentions, norms):
    """Copies your layer's weights into PyTorch's: ``attentions`` maps PyTorch's attention names to yours.

    First every parameter of your layer is moved a little (seeded noise), so that its LayerNorms
    differ from one another and using one norm in place of another shows.
    """
    noise = torch.Generator().manual_seed(0)
    with torch.no_grad():
        for parameter in yours.parameters():
            parameter.add_(0.1 * torch.randn(parameter.shape, generator=noise))
    for theirs, mine in attentions.items():
        copy_attention(getattr(pytorch, theirs), _projections(getattr(yours, mine, None), f"{what}.{mine}"))
    w_1, w_2 = _feed_forward(getattr(yours, "feed_forward", None), f"{what}.feed_forward")
    pairs = [(pytorch.linear1, w_1), (pytorch.linear2, w_2)]
    pairs += [(getattr(pytorch, n), _norm(yours, n, what)) for n in norms]
    with torch.no_grad():
        for target, source in pairs:
            target.weight.copy_(source.weight)
            target.bias.copy_(source.bias)
            if isinstance(source, nn.LayerNorm):
                target.eps = source.eps
    return pytorch.eval()


def _hidden(mask, batch, n_q, n_k):
    """A lab mask (batch or 1, 1 or n_q, n_k) as PyTorch's attn_mask: one copy per head, True = hidden."""
    return pytorch_mask(None if mask is None else mask[:, None], batch, H, n_q, n_k)


def _output_and_weights(result):
    expect(isinstance(result, (tuple, list)) and len(result) == 2,
           f"scaled_dot_product_attention should return (output, weights), got {type(result).__name__}")
    return tensor(result[0], "output"), tensor(result[1], "weights")


def _expect_bool_mask(mask, expected, what):
    mask = tensor(mask, what)
    expect_shape(mask, expected.shape, what)
    expect(mask.dtype == torch.bool, f"{what} has dtype {mask.dtype}, expected torch.bool")
    expect(torch.equal(mask, expected), f"{what} is {mask.int().tolist()}, expected {expected.int().tolist()} "
           "(1 = True = may attend)")


# --- the checks -----------------------------------------------------------------------------------

def test_scaled_dot_product_attention_matches_pytorch_and_returns_its_weights():
    transformer = student("transformer")
    query, key, value = x(2, 2, 3, 4, seed=1), x(2, 2, 5, 4, seed=2), x(2, 2, 5, 6, seed=3)
    mask = torch.ones(2, 1, 3, 5, dtype=torch.bool)
    mask[0, :, :, 4] = False            # sentence 1: key 4 is hidden from every query
    mask[1, :, 0, 2:] = False           # sentence 2: query 0 sees keys 0 and 1 only,
    mask[1, :, 2, :] = False            # and query 2 sees no key at all
    setup = ("out, weights = scaled_dot_product_attention(query, key, value, mask): query (2, 2, 3, 4), "
             "key (2, 2, 5, 4), value (2, 2, 5, 6), a bool mask (2, 1, 3, 5) shared by both heads; expected: "
             "F.scaled_dot_product_attention(query, key, value, attn_mask=mask)")
    out, weights = _output_and_weights(run(transformer.scaled_dot_product_attention, query, key, value, mask))
    expect_shape(out, (2, 2, 3, 6), "output of scaled_dot_product_attention")
    expect_shape(weights, (2, 2, 3, 5), "weights of scaled_dot_product_attention")
    expect(torch.isfinite(out).all() and torch.isfinite(weights).all(), f"{setup}\nthe output or the weights hold "
           "nan or inf: query 2 of sentence 2 sees no key; fill hidden scores with -1e9 (not -inf) before the softmax")
    expect_rows_sum_to_one(weights, "weights of scaled_dot_product_attention")
    sees_a_key = mask.any(dim=-1, keepdim=True).expand(2, 2, 3, 1)  # PyTorch gives nan for a query that sees nothing
    expected = F.scaled_dot_product_attention(query, key, value, attn_mask=mask)
    expect_close(out, torch.where(sees_a_key, expected, out), "output", setup=setup)
    softmax = torch.softmax((query @ key.transpose(-2, -1) / math.sqrt(4)).masked_fill(~mask, -math.inf), dim=-1)
    expect_close(weights, torch.where(sees_a_key, softmax, weights), "weights", setup=setup +
                 "\nweights = softmax(query @ key^T / sqrt(d_k)) with hidden keys at exactly 0, d_k = 4")


def test_scaled_dot_product_attention_returns_the_weights_dropout_left():
    transformer = student("transformer")
    query, key, value = x(2, 2, 3, 4, seed=1), x(2, 2, 5, 4, seed=2), x(2, 2, 5, 6, seed=3)
    torch.manual_seed(0)
    result = run(transformer.scaled_dot_product_attention, query, key, value, None, nn.Dropout(0.5))
    out, weights = _output_and_weights(result)
    what = ("out, weights = scaled_dot_product_attention(query, key, value, mask=None, dropout=nn.Dropout(0.5)), "
            "the dropout in training mode")
    expect_shape(weights, (2, 2, 3, 5), "weights of scaled_dot_product_attention")
    expect((weights == 0).any(), f"{what}: none of the 60 weights returned is 0; apply the dropout to the weights "
           "after the softmax, and return the weights the dropout left")
    expect_close(out, weights @ value, "output", setup=f"{what}: output should be weights @ value for the weights "
                 "returned, the ones the dropout left")


def test_padding_and_subsequent_masks_are_bool_masks_of_the_documented_shapes():
    transformer = student("transformer")
    tokens = torch.tensor([[5, 3, 8, 0, 0], [7, 1, 2, 4, 9]])
    _expect_bool_mask(run(transformer.padding_mask, tokens, 0), tokens[:, None, :] != 0,
                      f"padding_mask(tokens={tokens.tolist()}, pad_id=0)")
    _expect_bool_mask(run(transformer.padding_mask, tokens, 9), tokens[:, None, :] != 9,
                      f"padding_mask(tokens={tokens.tolist()}, pad_id=9)")
    three = torch.tensor([[[True, False, False], [True, True, False], [True, True, True]]])
    _expect_bool_mask(run(transformer.subsequent_mask, 3), three, "subsequent_mask(3)")
    for size in (1, 6):
        _expect_bool_mask(run(transformer.subsequent_mask, size), causal(size), f"subsequent_mask({size})")


def _against_nn_multihead_attention(query, memory, masks):
    """Your MultiHeadedAttention(H, D_MODEL) on (query, memory, memory) for each mask, against PyTorch's."""
    module = run(student("transformer").MultiHeadedAttention, H, D_MODEL)
    module.eval()
    what = f"MultiHeadedAttention({H}, {D_MODEL})"
    pytorch = copy_attention(nn.MultiheadAttention(D_MODEL, H, batch_first=True), _projections(module, what)).eval()
    (batch, n_q, _), n_k = query.shape, memory.shape[1]
    for described, mask in masks.items():
        setup = (f"out = {what}(query, key, value, mask), eval mode, query of shape {tuple(query.shape)}, key = value "
                 f"of shape {tuple(memory.shape)}, mask = {described}; expected: nn.MultiheadAttention({D_MODEL}, {H}, "
                 "batch_first=True) holding your linears[0..2] as in_proj and linears[3] as out_proj")
        expected = pytorch(query, memory, memory, attn_mask=_hidden(mask, batch, n_q, n_k), need_weights=False)[0]
        expect_close(run(module, query, memory, memory, mask), expected, "out", setup=setup)


def test_multi_headed_attention_matches_nn_multihead_attention_in_self_attention():
    inputs = x(2, 5, D_MODEL, seed=4)
    _against_nn_multihead_attention(inputs, inputs, {
        "None": None, f"{PADDED.int().tolist()}, a padding mask (2, 1, 5)": PADDED,
        "a subsequent mask (1, 5, 5), True on and below the diagonal": causal(5)})


def test_multi_headed_attention_cross_attention_3_queries_over_6_keys():
    memory = torch.ones(2, 1, 6, dtype=torch.bool)
    memory[1, :, 4:] = False
    _against_nn_multihead_attention(x(2, 3, D_MODEL, seed=5), x(2, 6, D_MODEL, seed=6), {
        "None": None, f"{memory.int().tolist()}, a padding mask (2, 1, 6) over the keys": memory})


def test_multi_headed_attention_rejects_d_model_not_divisible_by_h():
    transformer = student("transformer")
    expect_raises(ValueError, transformer.MultiHeadedAttention, 3, D_MODEL, what=f"MultiHeadedAttention(3, {D_MODEL})",
                  because=f" (d_model {D_MODEL} is not divisible by h = 3 heads; note the order: h first)")


def test_feed_forward_is_w_2_of_relu_of_w_1_with_inner_width_d_ff():
    ffn = run(student("transformer").PositionwiseFeedForward, D_MODEL, D_FF)
    ffn.eval()
    w_1, w_2 = _feed_forward(ffn, f"PositionwiseFeedForward({D_MODEL}, {D_FF})")
    inputs = x(2, 5, D_MODEL, seed=7)
    expected = F.linear(F.relu(F.linear(inputs, w_1.weight, w_1.bias)), w_2.weight, w_2.bias)
    expect_close(run(ffn, inputs), expected, "out", setup=(
        f"out = PositionwiseFeedForward({D_MODEL}, {D_FF})(x), eval mode, x of shape (2, 5, {D_MODEL}); "
        "expected: w_2(relu(w_1(x))) with your w_1 and w_2"))


def test_positional_encoding_is_a_fixed_sin_cos_buffer_added_to_the_input():
    transformer = student("transformer")
    module = run(transformer.PositionalEncoding, 6, 0.0, max_len=50)
    what = "PositionalEncoding(6, 0.0, max_len=50)"
    expect("pe" in dict(module.named_buffers()), f"{what} has no buffer named `pe`: create it with "
           "self.register_buffer('pe', ...), so it moves with .to(device) and is not trained")
    expect("pe" not in dict(module.named_parameters()), f"{what}.pe is a parameter; the table is fixed: a buffer")
    position = torch.arange(50, dtype=torch.float64)[:, None]
    angle = position / 10000 ** (torch.arange(0, 6, 2, dtype=torch.float64) / 6)  # 2i = 0, 2, 4
    table = torch.stack([angle.sin(), angle.cos()], dim=-1).reshape(1, 50, 6)  # sin, cos, sin, cos, ...
    pe = tensor(module.pe, f"{what}.pe")
    expect(tuple(pe.shape) in ((1, 50, 6), (50, 6)), f"{what}.pe has shape {tuple(pe.shape)}, expected "
           "(1, max_len, d_model) = (1, 50, 6)")
    expect_close(pe.reshape(1, 50, 6), table, f"{what}.pe",
                 setup=f"{FORMULA}\n(sin at the even dimensions, cos at the odd ones)")
    length = tuple(tensor(run(transformer.PositionalEncoding, 6, 0.0).pe, "PositionalEncoding(6, 0.0).pe").shape)
    expect(length[-2:] == (5000, 6), f"PositionalEncoding(6, 0.0).pe has shape {length}, expected (1, 5000, 6): "
           "max_len defaults to 5000")
    inputs = x(2, 7, 6, seed=8)
    expect_close(run(module, inputs), inputs + table[:, :7], "out",
                 setup=f"out = {what}(x), x of shape (2, 7, 6): out = x + pe[:, :7], where {FORMULA}")


def test_encoder_layer_matches_nn_transformer_encoder_layer():
    layer = run(student("transformer").EncoderLayer, D_MODEL, H, D_FF)
    layer.eval()
    what = f"EncoderLayer({D_MODEL}, {H}, {D_FF})"
    pytorch = _load_pytorch_layer(nn.TransformerEncoderLayer(D_MODEL, H, D_FF, dropout=0.0, batch_first=True),
                                  layer, what, {"self_attn": "self_attn"}, ("norm1", "norm2"))
    inputs = x(2, 5, D_MODEL, seed=9)
    for mask in (None, PADDED):
        setup = (f"out = {what}(x, mask), eval mode, x of shape (2, 5, {D_MODEL}), mask = "
                 f"{None if mask is None else mask.int().tolist()}; expected: nn.TransformerEncoderLayer({D_MODEL}, "
                 f"{H}, {D_FF}, dropout=0.0, batch_first=True) holding your weights\n"
                 "(post-norm: x = norm1(x + self_attn(x, x, x, mask)), then x = norm2(x + feed_forward(x)); "
                 "every parameter of your layer moved a little first, so that norm1 and norm2 differ)")
        expected = pytorch(inputs, src_mask=_hidden(mask, 2, 5, 5))
        expect_close(run(layer, inputs, mask), expected, "out", setup=setup)


def test_decoder_layer_matches_nn_transformer_decoder_layer():
    layer = run(student("transformer").DecoderLayer, D_MODEL, H, D_FF)
    layer.eval()
    what = f"DecoderLayer({D_MODEL}, {H}, {D_FF})"
    pytorch = _load_pytorch_layer(nn.TransformerDecoderLayer(D_MODEL, H, D_FF, dropout=0.0, batch_first=True), layer,
                                  what, {"self_attn": "self_attn", "multihead_attn": "src_attn"},
                                  ("norm1", "norm2", "norm3"))
    target, memory = x(2, 4, D_MODEL, seed=10), x(2, 6, D_MODEL, seed=11)
    src_mask = torch.ones(2, 1, 6, dtype=torch.bool)
    src_mask[1, :, 4:] = False
    tgt_mask = causal(4)
    setup = (f"out = {what}(x, memory, src_mask, tgt_mask), eval mode, x of shape (2, 4, {D_MODEL}) (4 target "
             f"positions), memory of shape (2, 6, {D_MODEL}) (6 source positions), src_mask = "
             f"{src_mask.int().tolist()}, tgt_mask = subsequent_mask(4); expected: nn.TransformerDecoderLayer("
             f"{D_MODEL}, {H}, {D_FF}, dropout=0.0, batch_first=True) holding your weights (its multihead_attn is "
             "your src_attn)\n(x = norm1(x + self_attn(x, x, x, tgt_mask)); x = norm2(x + src_attn(x, memory, memory, "
             "src_mask)); x = norm3(x + feed_forward(x)); every parameter of your layer moved a little first, so that "
             "the three norms differ)")
    expected = pytorch(target, memory, tgt_mask=_hidden(tgt_mask, 2, 4, 4), memory_mask=_hidden(src_mask, 2, 4, 6))
    expect_close(run(layer, target, memory, src_mask, tgt_mask), expected, "out", setup=setup)
