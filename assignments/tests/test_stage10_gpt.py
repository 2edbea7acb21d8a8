"""Stage 10 self-checks: a GPT built from your own attention (attention_lab/gpt.py).

Expected values come from PyTorch's own pieces (``F.gelu(approximate="tanh")``), from your own
layers (a block is its two branches, computed with your own norms, attention and feed-forward), from
the book's printed parameter count, and from the kit's trained tiny model (``tiny_gpt.py`` and its
weights beside these checks): a model that learned to copy a word it has seen goes on copying it.
"""
import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F

import tiny_gpt
from lab_checks import expect, expect_close, expect_linear, expect_shape, run, student, tensor

pytestmark = pytest.mark.stage10

SMALL = {"vocab_size": 11, "context_length": 8, "emb_dim": 12, "n_heads": 3, "n_layers": 2, "drop_rate": 0.0,
         "qkv_bias": False}
CONTEXT = tiny_gpt.CONFIG["context_length"]


def x(*shape, seed=0):
    return torch.randn(*shape, generator=torch.Generator().manual_seed(seed))


def trained(gpt, cls="GPTModel"):
    model = run(getattr(gpt, cls), tiny_gpt.CONFIG, what=f"{cls}(tiny_gpt.CONFIG)")
    run(model.load_state_dict, tiny_gpt.weights(), what=f"{cls}.load_state_dict(the kit's trained weights)",
        hint=lambda exc: "the names of your parameters must be the docstring's "
                         "(tok_emb, trf_blocks.0.att.W_query, ...)")
    return model.eval()


def test_layernorm_gives_each_vector_mean_0_and_variance_1():
    gpt = student("gpt")
    norm = run(gpt.LayerNorm, 6)
    expect(isinstance(getattr(norm, "scale", None), nn.Parameter) and isinstance(getattr(norm, "shift", None),
                                                                                  nn.Parameter),
           "LayerNorm needs two nn.Parameters, scale (ones) and shift (zeros)")
    out = tensor(run(norm, x(3, 6) * 4 + 2), "LayerNorm(6)(x)")
    expect_close(out.mean(-1), torch.zeros(3), "the mean of every row of LayerNorm's output", atol=1e-5)
    expect_close(out.var(-1, unbiased=False), torch.ones(3), "the (biased) variance of every row of LayerNorm's "
                 "output (eps = 1e-5 makes it a little below 1)", atol=1e-3)


def test_gelu_is_the_tanh_approximation():
    gpt = student("gpt")
    values = torch.linspace(-4, 4, 17)
    out = tensor(run(gpt.GELU(), values), "GELU()(x)")
    expect_close(out, F.gelu(values, approximate="tanh"), "GELU()(x) for x = -4, -3.5, ..., 4",
                 setup="compared with F.gelu(x, approximate='tanh')")


def test_feedforward_widens_four_times_and_back():
    gpt = student("gpt")
    ff = run(gpt.FeedForward, {"emb_dim": 8})
    layers = getattr(ff, "layers", None)
    expect(isinstance(layers, nn.Sequential) and len(layers) == 3, "FeedForward.layers should be an nn.Sequential "
           "of Linear(d, 4 d), GELU(), Linear(4 d, d)")
    expect_linear(layers[0], 8, 32, "FeedForward.layers[0]")
    expect_linear(layers[2], 32, 8, "FeedForward.layers[2]")
    expect_shape(run(ff, x(2, 3, 8)), (2, 3, 8), "FeedForward({'emb_dim': 8})(x) for x of shape (2, 3, 8)")


def test_a_block_is_your_attention_and_feed_forward_each_added_to_its_input():
    gpt, multihead = student("gpt"), student("multihead")
    torch.manual_seed(1)
    block = run(gpt.TransformerBlock, SMALL).eval()
    expect(isinstance(getattr(block, "att", None), multihead.MultiHeadAttention),
           "TransformerBlock.att should be your stage 4 MultiHeadAttention")
    with torch.no_grad():
        for p in block.parameters():  # away from LayerNorm's ones and zeros, so that a swapped norm shows
            p.add_(0.1 * torch.randn_like(p))
        tokens = x(2, 5, 12, seed=2)
        out = tensor(run(block, tokens), "TransformerBlock(cfg)(x)")
        middle = tokens + block.att(block.norm1(tokens))
        expect_close(out, middle + block.ff(block.norm2(middle)), "TransformerBlock's output",
                     setup="expected (pre-norm): h = x + att(norm1(x)); out = h + ff(norm2(h)), with your own layers")


def test_gpt_has_the_books_parameter_count():
    gpt = student("gpt")
    with torch.device("meta"):  # GPT-2 small without allocating its 650 MB
        model = run(gpt.GPTModel, gpt.GPT_CONFIG_124M, what="GPTModel(GPT_CONFIG_124M)")
    total = sum(p.numel() for p in model.parameters())
    expect(total == 163_009_536, f"GPTModel(GPT_CONFIG_124M) has {total:,} parameters; the book counts 163,009,536")
    head = getattr(model, "out_head", None)
    expect(isinstance(head, nn.Linear) and head.bias is None, "out_head should be nn.Linear(emb_dim, vocab_size, "
           "bias=False)")
    expect(total - head.weight.numel() == 124_412_160, "without out_head the count should be 124,412,160 (the book's "
           "count when the output head shares the token embeddings)")


def test_the_trained_model_copies_a_word_it_has_seen():
    gpt = student("gpt")
    model = trained(gpt)
    prompt = tiny_gpt.encode(tiny_gpt.SAMPLE)
    out = tensor(run(gpt.generate_greedy, model, prompt, 20, CONTEXT), "generate_greedy(...)")
    expect_shape(out, (1, prompt.shape[1] + 20), "generate_greedy(model, prompt, 20, context_size)")
    written = tiny_gpt.decode(out[0, prompt.shape[1]:])
    expect(written == "berjacks lumberjacks", f"after {tiny_gpt.SAMPLE!r} the trained model should go on "
           f"'berjacks lumberjacks'; yours writes {written!r}")


def test_cached_generation_writes_the_same_text():
    gpt = student("gpt")
    prompt = tiny_gpt.encode(tiny_gpt.SAMPLE)
    plain = tensor(run(gpt.generate_greedy, trained(gpt), prompt, 50, CONTEXT), "generate_greedy(...)")
    cached = tensor(run(gpt.generate_cached, trained(gpt, "CachedGPTModel"), prompt, 50, CONTEXT),
                    "generate_cached(...)")
    expect(torch.equal(plain, cached), f"generate_cached writes {tiny_gpt.decode(cached[0])!r}; generate_greedy "
           f"writes {tiny_gpt.decode(plain[0])!r} (50 new tokens run past the context of {CONTEXT}: a full cache "
           "starts afresh)")


def test_a_few_training_steps_lower_the_loss_and_leave_eval_mode():
    gpt = student("gpt")
    torch.manual_seed(0)
    model = run(gpt.GPTModel, {**SMALL, "vocab_size": 27, "context_length": 16})
    tokens = tiny_gpt.repeats(8, seed=5, length=17)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-2)
    losses = run(gpt.train_steps, model, [(tokens[:, :-1], tokens[:, 1:])], optimizer, 10)
    expect(isinstance(losses, list) and len(losses) == 10, f"train_steps(..., steps=10) should return 10 losses in "
           f"a list, got {type(losses).__name__}")
    expect(losses[-1] < losses[0] - 0.2, f"the loss went from {losses[0]:.3f} to {losses[-1]:.3f} in 10 steps on one "
           "batch; it should fall")
    expect(not model.training, "train_steps should leave the model in eval mode")
