"""The chapter's printed numbers, held against the reference and against the seed notes' text."""
import re
from pathlib import Path

import pytest
import torch

from autograder.public import book

ROOT = Path(__file__).resolve().parent.parent
SEEDS = ROOT.parent / "shared" / "seeds"


def close(actual, printed):
    assert actual.shape == printed.shape
    assert torch.allclose(actual.detach(), printed, atol=book.PRINTED, rtol=0), f"{actual} vs {printed}"


def test_stage1_numbers(ref):
    s = ref["simple"]
    x = s.INPUTS
    close(s.attention_scores_loop(x, x[1]), book.ATTN_SCORES_2)
    close(s.attention_scores(x, x[1]), book.ATTN_SCORES_2)
    close(s.normalize_by_sum(book.ATTN_SCORES_2), book.WEIGHTS_2_BY_SUM)
    close(s.softmax_naive(s.attention_scores(x, x[1])), book.WEIGHTS_2_SOFTMAX)
    close(s.softmax_stable(s.attention_scores(x, x[1])), book.WEIGHTS_2_SOFTMAX)
    close(s.context_vector(x, torch.softmax(x @ x[1], 0)), book.CONTEXT_VEC_2)
    close(s.attention_weights_all(x), book.ATTN_WEIGHTS)
    close(s.context_vectors_all(x), book.ALL_CONTEXT_VECS)


def test_stage2_numbers(ref):
    sa, x = ref["self_attention"], ref["simple"].INPUTS
    torch.manual_seed(123)
    w = [torch.nn.Parameter(torch.rand(3, 2)) for _ in range(3)]
    scores, weights, context = sa.attend_one_query(x[1], x, *w)
    close(scores, book.STEP_SCORES_2)
    close(weights, book.STEP_WEIGHTS_2)
    close(context, book.STEP_CONTEXT_2)
    torch.manual_seed(123)
    close(sa.SelfAttention_v1(3, 2)(x), book.SA_V1)
    torch.manual_seed(789)
    close(sa.SelfAttention_v2(3, 2)(x), book.SA_V2)


def test_stage3_to_5_numbers(ref):
    x = ref["simple"].INPUTS
    batch = torch.stack((x, x))
    torch.manual_seed(789)
    v2 = ref["self_attention"].SelfAttention_v2(3, 2)
    scores = v2.W_query(x) @ v2.W_key(x).T
    close(ref["causal"].causal_weights_by_multiplication(scores, 2), book.CAUSAL_WEIGHTS)
    close(ref["causal"].causal_weights_by_fill(scores, 2), book.CAUSAL_WEIGHTS)
    for module, cls, printed in (("causal", "CausalAttention", book.CAUSAL_ATTENTION),
                                 ("buffers", "CausalAttentionWithBuffer", book.CAUSAL_ATTENTION),
                                 ("buffers", "CausalAttentionWithoutBuffers", book.CAUSAL_ATTENTION)):
        torch.manual_seed(123)
        out = getattr(ref[module], cls)(3, 2, 6, 0.0)(batch)
        close(out[0], printed)
        close(out[1], printed)
    mh = ref["multihead"]
    for cls, printed in (("MultiHeadAttentionWrapper", book.MHA_WRAPPER), ("MultiHeadAttention", book.MHA)):
        torch.manual_seed(123)
        close(getattr(mh, cls)(3, 2, 6, 0.0, num_heads=2)(batch)[0], printed)
    assert mh.count_parameters(mh.MultiHeadAttention(768, 768, 1024, 0.0, num_heads=12)) == book.GPT2_MHA_PARAMETERS


def test_probe_inputs_are_the_books(ref):
    from autograder.probes.common import INPUTS

    assert torch.equal(INPUTS, ref["simple"].INPUTS)


def _numbers(text):
    return re.findall(r"-?\d+\.\d{4}\b", text)


@pytest.mark.skipif(not SEEDS.is_dir(), reason="the seed notes are not beside this checkout")
@pytest.mark.parametrize("name", [n for n in dir(book) if n.isupper() and isinstance(getattr(book, n), torch.Tensor)
                                  and n not in ("INPUTS", "BATCH")])
def test_book_values_are_printed_in_the_seeds(name):
    """Every constant of book.py appears, digit for digit and in order, in the seed notes."""
    printed = " ".join(_numbers(" ".join(p.read_text() for p in sorted(SEEDS.glob("*.txt")))))
    ours = " ".join(f"{v:.4f}" for v in getattr(book, name).flatten().tolist()).replace("-0.0000", "0.0000")
    assert ours in printed, f"{name} is not printed in the seed notes"


@pytest.mark.skipif(not SEEDS.is_dir(), reason="the seed notes are not beside this checkout")
def test_book_inputs_are_the_seeds():
    text = " ".join(p.read_text() for p in sorted(SEEDS.glob("*.txt")))
    for row in book.INPUTS.tolist():
        assert "[" + ", ".join(f"{v:.2f}" for v in row) + "]" in text
