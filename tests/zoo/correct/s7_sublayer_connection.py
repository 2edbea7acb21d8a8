"""EncoderLayer and DecoderLayer built on a SublayerConnection helper (norm(x + dropout(sublayer(x)))) that shares the layers' norms; the FFN uses F.relu."""
MODULE = "transformer"

import torch.nn.functional as F


class SublayerConnection(nn.Module):
    """Post-norm residual around any sublayer; holds no parameters of its own."""

    def __init__(self, norm, dropout):
        super().__init__()
        self.norm = norm
        self.dropout = dropout

    def forward(self, x, sublayer):
        return self.norm(x + self.dropout(sublayer(x)))


class PositionwiseFeedForward(PositionwiseFeedForward):
    def forward(self, x):
        return self.w_2(self.dropout(F.relu(self.w_1(x))))


class EncoderLayer(EncoderLayer):
    def __init__(self, d_model, h, d_ff, dropout=0.1):
        super().__init__(d_model, h, d_ff, dropout)
        self.sublayer = nn.ModuleList([SublayerConnection(self.norm1, self.dropout),
                                       SublayerConnection(self.norm2, self.dropout)])

    def forward(self, x, mask=None):
        x = self.sublayer[0](x, lambda x: self.self_attn(x, x, x, mask))
        return self.sublayer[1](x, self.feed_forward)


class DecoderLayer(DecoderLayer):
    def __init__(self, d_model, h, d_ff, dropout=0.1):
        super().__init__(d_model, h, d_ff, dropout)
        self.sublayer = nn.ModuleList([SublayerConnection(norm, self.dropout)
                                       for norm in (self.norm1, self.norm2, self.norm3)])

    def forward(self, x, memory, src_mask=None, tgt_mask=None):
        x = self.sublayer[0](x, lambda x: self.self_attn(x, x, x, tgt_mask))
        x = self.sublayer[1](x, lambda x: self.src_attn(x, memory, memory, src_mask))
        return self.sublayer[2](x, self.feed_forward)
