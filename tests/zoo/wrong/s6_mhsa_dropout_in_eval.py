"""MultiHeadSelfAttention applies F.dropout(weights, p) without training=self.training: attention dropout stays on in eval mode."""
MODULE = "practical"
LOSES = ["s6.mhsa.eval"]
MENTIONS = "dropout must be off in eval mode"
ONLY = True

import torch.nn.functional as F


class MultiHeadSelfAttention(MultiHeadSelfAttention):
    def forward(self, x, attention_mask=None):
        batch, seq, hidden = x.shape

        def heads(t):
            return t.view(batch, seq, self.num_heads, self.head_dim).transpose(1, 2)

        queries, keys, values = heads(self.q_proj(x)), heads(self.k_proj(x)), heads(self.v_proj(x))
        scores = queries @ keys.transpose(-2, -1) / self.head_dim ** 0.5
        weights = F.dropout(masked_softmax(scores, attention_mask), self.attention_dropout.p)
        return self.o_proj((weights @ values).transpose(1, 2).reshape(batch, seq, hidden))
