"""DecoderLayer calls its attention layers with keyword arguments (query=, key=, value=, mask=) and keeps a dropout per sublayer, as nn.TransformerDecoderLayer does."""
MODULE = "transformer"


class DecoderLayer(DecoderLayer):
    def __init__(self, d_model, h, d_ff, dropout=0.1):
        super().__init__(d_model, h, d_ff, dropout)
        self.dropout1, self.dropout2, self.dropout3 = nn.Dropout(dropout), nn.Dropout(dropout), nn.Dropout(dropout)

    def forward(self, x, memory, src_mask=None, tgt_mask=None):
        x = self.norm1(x + self.dropout1(self.self_attn(query=x, key=x, value=x, mask=tgt_mask)))
        x = self.norm2(x + self.dropout2(self.src_attn(query=x, key=memory, value=memory, mask=src_mask)))
        return self.norm3(x + self.dropout3(self.feed_forward(x)))
