"""The stages: what each teaches, the module a student writes for it, and what it builds on.

The one list of stages. The graders, the reports, the nbgrader course, the GitHub Classroom
workflow and the public self-checks' stage markers all read it (the build copies this file beside
the public checks, so only the standard library is imported here).
"""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Stage:
    number: int
    module: str  # attention_lab/<module>.py
    title: str
    teaches: str
    builds_on: tuple = ()  # modules of earlier stages that this stage's code imports


def numbered(*rows: Stage) -> dict[int, Stage]:
    """The rows by number. A number or a module given twice is refused with a sentence: a row added for a
    stage that exists would otherwise replace it without a word, and every total would be wrong."""
    stages: dict[int, Stage] = {}
    for row in rows:
        taken = stages.get(row.number) or next((s for s in stages.values() if s.module == row.module), None)
        if taken:
            what = f"stage {row.number}" if taken.number == row.number else f"module {row.module!r}"
            raise ValueError(f"{what} is in the curriculum twice ({taken.module!r}, {taken.title!r}; and "
                             f"{row.module!r}, {row.title!r}): give a new stage the next free number, "
                             f"{max(stages) + 1}, and a module of its own")
        stages[row.number] = row
    return stages


STAGES = numbered(
    Stage(1, "simple", "attention without trainable weights",
          "dot-product scores, normalisation, softmax (and why it must be stabilised), context vectors"),
    Stage(2, "self_attention", "self-attention with trainable weights",
          "query/key/value projections, scaling by 1/sqrt(d_k), nn.Parameter vs nn.Linear"),
    Stage(3, "causal", "causal attention with dropout",
          "hiding future tokens two ways, batches, dropout on the attention weights"),
    Stage(4, "multihead", "multi-head attention",
          "stacked heads, splitting one projection into heads, out_proj, nn.MultiheadAttention",
          builds_on=("causal",)),  # the wrapper's heads are stage 3's CausalAttention
    Stage(5, "buffers", "buffers",
          "register_buffer: moving with .to(device) and persisting in the state_dict"),
    Stage(6, "practical", "self-attention as model code writes it",
          "a fused QKV projection, padding masks that never give nan, attention dropout, q/k/v/o projections"),
    Stage(7, "transformer", "Transformer encoder and decoder layers",
          "scaled dot-product attention, padding and subsequent masks, cross-attention, the feed-forward "
          "network, sinusoidal positions, post-norm residual sublayers, checked against PyTorch's own layers"),
    Stage(8, "modern", "attention as current models run it",
          "grouped-query and multi-query attention, a KV cache for decoding one token at a time, "
          "fast attention with F.scaled_dot_product_attention, graded on speed"),
    Stage(9, "frontier", "attention in today's open models",
          "rotary position embeddings, sliding-window attention with a bounded cache, multi-head latent "
          "attention, and what each cache costs in bytes",
          builds_on=("modern",)),  # RopeGroupedQueryAttention extends stage 8's GroupedQueryAttention
    Stage(10, "gpt", "a GPT built from your own attention",
          "LayerNorm, GELU and the feed-forward network, pre-norm Transformer blocks, the GPT model loading "
          "trained weights, greedy generation with and without a KV cache, a few steps of training",
          # its blocks hold stage 4's attention, and its cached twin stage 8's; stage 4's module imports stage
          # 3's, so a course that gives stage 4 gives stage 3 too (or teaches it)
          builds_on=("causal", "multihead", "modern")),
)

STAGE_OF = {s.module: s.number for s in STAGES.values()}  # module -> its stage


def modules_for(stages) -> list[str]:
    """The modules that grading ``stages`` imports: theirs, and those they build on, first."""
    own = [STAGES[n].module for n in sorted(stages)]
    needed = [m for n in sorted(stages) for m in STAGES[n].builds_on if m not in own]
    return list(dict.fromkeys(needed + own))


def stages_using(module: str) -> set[int]:
    """The stages whose grading runs ``module``'s code: its own, and those that build on it."""
    return {STAGE_OF[module]} | {s.number for s in STAGES.values() if module in s.builds_on}
