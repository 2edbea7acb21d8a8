"""DecoderLayer swaps query and memory in cross-attention: src_attn(memory, x, x, src_mask), queries from the encoder, keys and values from the decoder."""
MODULE = "transformer"
LOSES = ["s7.decoder.cross_source", "s7.decoder.oracle"]


class DecoderLayer(DecoderLayer):
    def forward(self, x, memory, src_mask=None, tgt_mask=None):
        x = self.norm1(x + self.dropout(self.self_attn(x, x, x, tgt_mask)))
        x = self.norm2(x + self.dropout(self.src_attn(memory, x, x, src_mask)))
        return self.norm3(x + self.dropout(self.feed_forward(x)))
