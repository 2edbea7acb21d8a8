"""EncoderLayer calls self_attn(x, x, x) without the mask: real tokens attend to padding."""
MODULE = "transformer"
LOSES = ["s7.encoder.oracle"]
MENTIONS = "padding mask"
ONLY = True


class EncoderLayer(EncoderLayer):
    def forward(self, x, mask=None):
        x = self.norm1(x + self.dropout(self.self_attn(x, x, x)))
        return self.norm2(x + self.dropout(self.feed_forward(x)))
