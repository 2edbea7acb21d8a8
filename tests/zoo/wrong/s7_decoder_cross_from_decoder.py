"""DecoderLayer's cross-attention takes keys and values from the decoder: src_attn(x, x, x, src_mask), so memory is never read."""
MODULE = "transformer"
LOSES = ["s7.decoder.cross_source", "s7.decoder.oracle"]
MENTIONS = "not the encoder output"


class DecoderLayer(DecoderLayer):
    def forward(self, x, memory, src_mask=None, tgt_mask=None):
        x = self.norm1(x + self.dropout(self.self_attn(x, x, x, tgt_mask)))
        x = self.norm2(x + self.dropout(self.src_attn(x, x, x, src_mask)))
        return self.norm3(x + self.dropout(self.feed_forward(x)))
