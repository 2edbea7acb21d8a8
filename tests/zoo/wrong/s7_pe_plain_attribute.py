"""PositionalEncoding keeps pe as a plain tensor attribute (self.pe = ...), not a buffer: it neither moves with .to() nor is saved."""
MODULE = "transformer"
LOSES = ["s7.pe.buffer", "s7.pe.device"]
MENTIONS = "not a registered buffer"
ONLY = True


class PositionalEncoding(PositionalEncoding):
    def __init__(self, d_model, dropout, max_len=5000):
        super().__init__(d_model, dropout, max_len)
        table = self.pe
        del self.pe
        self.pe = table.clone()
