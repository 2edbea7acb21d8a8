"""EncoderLayer applies F.dropout(..., p) to its sublayer outputs without training=self.training: dropout stays on in eval mode."""
MODULE = "transformer"
LOSES = ["s7.encoder.eval"]
MENTIONS = "dropout must be off in eval mode"
ONLY = True

import torch.nn.functional as F


class EncoderLayer(EncoderLayer):
    def forward(self, x, mask=None):
        p = self.dropout.p
        x = self.norm1(x + F.dropout(self.self_attn(x, x, x, mask), p))
        return self.norm2(x + F.dropout(self.feed_forward(x), p))
