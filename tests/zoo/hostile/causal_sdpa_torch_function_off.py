"""CausalAttention on F.scaled_dot_product_attention called with torch functions switched off
(torch._C.DisableTorchFunction), so that no torch function mode sees the call: only the dispatcher
sees the fused kernel it reaches (or, with dropout, the softmax of its math path), in a stage whose
point is to write attention by hand."""
MODULE = "causal"
LOSES = ["s3.causal.[!m]*"]
MENTIONS = "F.scaled_dot_product_attention (aten::"  # its fused kernel, or with dropout its math path

import torch.nn.functional as F


class CausalAttention(CausalAttention):
    def forward(self, x):
        n = x.shape[1]
        queries, keys, values = self.W_query(x), self.W_key(x), self.W_value(x)
        allowed = self.mask[:n, :n] == 0
        p = self.dropout.p if self.training else 0.0
        with torch._C.DisableTorchFunction():
            return F.scaled_dot_product_attention(queries, keys, values, attn_mask=allowed, dropout_p=p)
