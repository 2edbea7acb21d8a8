"""CausalAttentionWithBuffer scales the scores by d_k * 0.5 instead of d_k ** 0.5. The two agree at d_k = 4, the
width of the other known-weights case, and nowhere else: the d_out=6 case tells them apart."""
MODULE = "buffers"
LOSES = ["s5.forward"]
ONLY = True
MENTIONS = "d_out=6"


class CausalAttentionWithBuffer(CausalAttentionWithBuffer):
    def forward(self, x):
        n = x.shape[1]
        queries, keys, values = self.W_query(x), self.W_key(x), self.W_value(x)
        scores = (queries @ keys.transpose(1, 2)).masked_fill(self.mask.bool()[:n, :n], -torch.inf)
        return self.dropout(torch.softmax(scores / (keys.shape[-1] * 0.5), dim=-1)) @ values
