"""The PyTorch examples' sequence-first ``PositionalEncoding`` pasted into stage 7's slot as it is, with no
adapter: what a student who copies it gets, fed the contract's batch-first input.

Source: pytorch/examples, ``word_language_model/model.py``, class ``PositionalEncoding`` (commit 77f55b9,
2025-08-25), BSD 3-Clause licence, Copyright (c) 2017, Pytorch contributors (the PyTorch tutorial
``transformer_tutorial.py`` printed the same class). The class, in ``tests/zoo/helpers/pytorch_examples_pe.py``,
is the source's, line for line (docstrings left out).

Wrong under the contract: fed (batch, seq, d_model), ``self.pe[:x.size(0)]`` takes the first *batch*
rows of the table, (batch, 1, d_model), and adds position ``b`` to every token of sequence ``b``. Its
``pe`` is also (max_len, 1, d_model), not a shape the contract names. The adapted version is
``s7_pe_pytorch_examples_sequence_first.py``.
"""
MODULE = "transformer"
HELPERS = ["pytorch_examples_pe"]  # the class, as the example writes it: the whole submission
LOSES = ["s7.pe.forward", "s7.pe.formula"]
ONLY = True  # its dropout is right: judged against its own eval output, it costs nothing more
MENTIONS = "sequence-first"
