"""EncoderLayer drops the residual connection of the attention sublayer: norm1(dropout(self_attn(x, x, x, mask)))."""
MODULE = "transformer"
LOSES = ["s7.encoder.oracle"]
ONLY = True


class EncoderLayer(EncoderLayer):
    def forward(self, x, mask=None):
        x = self.norm1(self.dropout(self.self_attn(x, x, x, mask)))
        return self.norm2(x + self.dropout(self.feed_forward(x)))
