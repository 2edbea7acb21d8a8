"""DecoderLayer applies F.dropout(..., p) to its sublayer outputs without training=self.training: dropout stays on in eval mode."""
MODULE = "transformer"
LOSES = ["s7.decoder.eval"]
ONLY = True

import torch.nn.functional as F


class DecoderLayer(DecoderLayer):
    def forward(self, x, memory, src_mask=None, tgt_mask=None):
        p = self.dropout.p
        x = self.norm1(x + F.dropout(self.self_attn(x, x, x, tgt_mask), p))
        x = self.norm2(x + F.dropout(self.src_attn(x, memory, memory, src_mask), p))
        return self.norm3(x + F.dropout(self.feed_forward(x), p))
