"""CausalAttention builds its mask inside forward on the CPU and fills the scores in place with it.

On the meta device an in-place ``masked_fill_`` with a CPU mask does not raise (an out-of-place one
does, and on CUDA both do): the grader must catch it by where the mask is, not by an error."""
MODULE = "causal"
LOSES = ["s3.causal.device"]
MENTIONS = "aten.masked_fill_ with a tensor on cpu"


class CausalAttention(CausalAttention):
    def forward(self, x):
        n = x.shape[1]
        queries, keys, values = self.W_query(x), self.W_key(x), self.W_value(x)
        scores = queries @ keys.transpose(1, 2)
        scores.masked_fill_(torch.triu(torch.ones(n, n), diagonal=1).bool(), -torch.inf)
        return self.dropout(torch.softmax(scores / keys.shape[-1] ** 0.5, dim=-1)) @ values
