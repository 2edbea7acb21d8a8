"""PositionalEncoding stores the table as nn.Parameter: the optimiser would change the fixed sinusoids."""
MODULE = "transformer"
LOSES = ["s7.pe.buffer"]
MENTIONS = "register_buffer"
ONLY = True


class PositionalEncoding(PositionalEncoding):
    def __init__(self, d_model, dropout, max_len=5000):
        super().__init__(d_model, dropout, max_len)
        table = self.pe
        del self.pe
        self.pe = nn.Parameter(table.clone())
