"""PositionalEncoding uses 10000^(i / d_model) with i the pair index 0, 1, 2, ... instead of 10000^(2i / d_model)."""
MODULE = "transformer"
LOSES = ["s7.pe.formula", "s7.pe.forward"]
ONLY = True


class PositionalEncoding(PositionalEncoding):
    def __init__(self, d_model, dropout, max_len=5000):
        super().__init__(d_model, dropout, max_len)
        position = torch.arange(max_len, dtype=torch.float32).unsqueeze(1)
        i = torch.arange(d_model // 2, dtype=torch.float32)
        angle = position / 10000 ** (i / d_model)
        pe = torch.zeros(max_len, d_model)
        pe[:, 0::2] = torch.sin(angle)
        pe[:, 1::2] = torch.cos(angle)
        self.register_buffer("pe", pe.unsqueeze(0))
