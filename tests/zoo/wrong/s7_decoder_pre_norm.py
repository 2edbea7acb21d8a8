"""DecoderLayer normalises before each sublayer (pre-norm) instead of after the residual sum."""
MODULE = "transformer"
LOSES = ["s7.decoder.oracle"]
MENTIONS = "nn.TransformerDecoderLayer"
ONLY = True


class DecoderLayer(DecoderLayer):
    def forward(self, x, memory, src_mask=None, tgt_mask=None):
        h = self.norm1(x)
        x = x + self.dropout(self.self_attn(h, h, h, tgt_mask))
        x = x + self.dropout(self.src_attn(self.norm2(x), memory, memory, src_mask))
        return x + self.dropout(self.feed_forward(self.norm3(x)))
