"""The PyTorch examples' sequence-first ``PositionalEncoding`` in stage 7's slot, written as the example
writes it, under an adapter that feeds it the contract's batch-first input.

Source: pytorch/examples, ``word_language_model/model.py``, class ``PositionalEncoding`` (commit 77f55b9,
2025-08-25), BSD 3-Clause licence, Copyright (c) 2017, Pytorch contributors. The PyTorch tutorial
``transformer_tutorial.py`` (pytorch/tutorials) printed the same class for years. The class, in
``tests/zoo/helpers/pytorch_examples_pe.py``, is the source's, line for line (its docstrings left out); only
the adapter below is ours.

The example's model runs sequence-first: ``x`` is (sequence length, batch, d_model), and ``pe`` is kept
as (max_len, 1, d_model) so that ``pe[:x.size(0)]`` is the first ``seq`` positions, broadcast over the
batch. The contract's ``forward(x)`` takes (batch, seq, d_model). The adapter transposes ``x`` in and
out and leaves the class alone: it replaces ``forward`` after the class is defined (the example's
``super(PositionalEncoding, self)`` names the class, so a subclass under the same name would recurse).

The table itself is the paper's (the same lines as the contract's), the dropout acts on ``x + pe``, and
``pe`` is a persistent buffer. How it departs from the contract: ``pe``'s shape, (max_len, 1, d_model),
where the contract asks for (1, max_len, d_model) or (max_len, d_model).
"""
MODULE = "transformer"
HELPERS = ["pytorch_examples_pe"]  # the class, as the example writes it
LOSES = ["s7.pe.formula"]
ONLY = True
MENTIONS = "shape (60, 1, 16)"


# ---- the adapter (ours): the contract's batch-first input ----

_sequence_first_forward = PositionalEncoding.forward


def _batch_first_forward(self, x):
    return _sequence_first_forward(self, x.transpose(0, 1)).transpose(0, 1)


PositionalEncoding.forward = _batch_first_forward
