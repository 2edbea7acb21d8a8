"""DecoderLayer forgets tgt_mask in its self-attention: every target position sees the future."""
MODULE = "transformer"
LOSES = ["s7.decoder.no_leak", "s7.decoder.oracle"]
MENTIONS = "must not see the tokens after it"


class DecoderLayer(DecoderLayer):
    def forward(self, x, memory, src_mask=None, tgt_mask=None):
        x = self.norm1(x + self.dropout(self.self_attn(x, x, x)))
        x = self.norm2(x + self.dropout(self.src_attn(x, memory, memory, src_mask)))
        return self.norm3(x + self.dropout(self.feed_forward(x)))
