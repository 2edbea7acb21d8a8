"""PositionalEncoding computes the frequencies with pow (1 / 10000 ** (2i / d_model)) and keeps pe as a (max_len, d_model) buffer."""
MODULE = "transformer"


class PositionalEncoding(PositionalEncoding):
    def __init__(self, d_model, dropout, max_len=5000):
        nn.Module.__init__(self)
        self.dropout = nn.Dropout(p=dropout)
        position = torch.arange(max_len).unsqueeze(1).float()
        two_i = torch.arange(0, d_model, 2).float()
        angle = position / torch.pow(10000.0, two_i / d_model)
        pe = torch.zeros(max_len, d_model)
        pe[:, 0::2] = torch.sin(angle)
        pe[:, 1::2] = torch.cos(angle)
        self.register_buffer("pe", pe)

    def forward(self, x):
        return self.dropout(x + self.pe[: x.size(1)])
