"""EncoderLayer normalises before each sublayer (pre-norm, x + sublayer(norm(x))) instead of after the residual sum as the paper and nn.TransformerEncoderLayer do."""
MODULE = "transformer"
LOSES = ["s7.encoder.oracle"]
MENTIONS = "nn.TransformerEncoderLayer"
ONLY = True


class EncoderLayer(EncoderLayer):
    def forward(self, x, mask=None):
        h = self.norm1(x)
        x = x + self.dropout(self.self_attn(h, h, h, mask))
        return x + self.dropout(self.feed_forward(self.norm2(x)))
