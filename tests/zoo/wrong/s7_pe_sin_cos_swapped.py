"""PositionalEncoding puts cos in the even columns and sin in the odd ones."""
MODULE = "transformer"
LOSES = ["s7.pe.formula", "s7.pe.forward"]
MENTIONS = "sin("
ONLY = True


class PositionalEncoding(PositionalEncoding):
    def __init__(self, d_model, dropout, max_len=5000):
        super().__init__(d_model, dropout, max_len)
        position = torch.arange(max_len, dtype=torch.float32).unsqueeze(1)
        frequency = torch.exp(torch.arange(0, d_model, 2, dtype=torch.float32) * (-math.log(10000.0) / d_model))
        pe = torch.zeros(max_len, d_model)
        pe[:, 0::2] = torch.cos(position * frequency)
        pe[:, 1::2] = torch.sin(position * frequency)
        self.register_buffer("pe", pe.unsqueeze(0))
