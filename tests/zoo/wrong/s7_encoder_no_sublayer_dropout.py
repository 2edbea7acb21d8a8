"""EncoderLayer forgets the dropout on each sublayer's output: norm(x + sublayer(x)) in train mode too."""
MODULE = "transformer"
LOSES = ["s7.sublayer_dropout"]
MENTIONS = "dropout(sublayer(x))"
ONLY = True


class EncoderLayer(EncoderLayer):
    def forward(self, x, mask=None):
        x = self.norm1(x + self.self_attn(x, x, x, mask))
        return self.norm2(x + self.feed_forward(x))
