"""MultiHeadAttention on F.scaled_dot_product_attention(is_causal=True), in a stage whose point is
to write attention by hand."""
MODULE = "multihead"
LOSES = ["s4.mha.seeded", "s4.mha.known_weights", "s4.mha.shapes", "s4.mha.no_leak", "s4.mha.dropout",
         "s4.mha.eval", "s4.mha.device", "s4.mha.gradients"]
MENTIONS = "F.scaled_dot_product_attention"

import torch.nn.functional as F


class MultiHeadAttention(MultiHeadAttention):
    def forward(self, x):
        b, n, _ = x.shape
        split = lambda t: t.view(b, n, self.num_heads, self.head_dim).transpose(1, 2)
        queries, keys, values = split(self.W_query(x)), split(self.W_key(x)), split(self.W_value(x))
        context = F.scaled_dot_product_attention(queries, keys, values, is_causal=True,
                                                 dropout_p=self.dropout.p if self.training else 0.0)
        return self.out_proj(context.transpose(1, 2).reshape(b, n, self.d_out))
