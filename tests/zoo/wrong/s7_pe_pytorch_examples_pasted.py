"""The PyTorch examples' sequence-first ``PositionalEncoding`` pasted into stage 7's slot as it is, with no
adapter: what a student who copies it gets, fed the contract's batch-first input.

Source: pytorch/examples, ``word_language_model/model.py``, class ``PositionalEncoding`` (commit 77f55b9,
2025-08-25), BSD 3-Clause licence, Copyright (c) 2017, Pytorch contributors (the PyTorch tutorial
``transformer_tutorial.py`` printed the same class). The class below is the source's, line for line
(docstrings left out).

Wrong under the contract: fed (batch, seq, d_model), ``self.pe[:x.size(0)]`` takes the first *batch*
rows of the table, (batch, 1, d_model), and adds position ``b`` to every token of sequence ``b``. Its
``pe`` is also (max_len, 1, d_model), not a shape the contract names. The adapted version is
``s7_pe_pytorch_examples_sequence_first.py``.
"""
MODULE = "transformer"
LOSES = ["s7.pe.forward", "s7.pe.formula"]
ONLY = True  # its dropout is right: judged against its own eval output, it costs nothing more
MENTIONS = "sequence-first"


# ---- pytorch/examples word_language_model/model.py (BSD-3-Clause), as written ----

class PositionalEncoding(nn.Module):
    def __init__(self, d_model, dropout=0.1, max_len=5000):
        super(PositionalEncoding, self).__init__()
        self.dropout = nn.Dropout(p=dropout)

        pe = torch.zeros(max_len, d_model)
        position = torch.arange(0, max_len, dtype=torch.float).unsqueeze(1)
        div_term = torch.exp(torch.arange(0, d_model, 2).float() * (-math.log(10000.0) / d_model))
        pe[:, 0::2] = torch.sin(position * div_term)
        pe[:, 1::2] = torch.cos(position * div_term)
        pe = pe.unsqueeze(0).transpose(0, 1)
        self.register_buffer('pe', pe)

    def forward(self, x):
        x = x + self.pe[:x.size(0), :]
        return self.dropout(x)
