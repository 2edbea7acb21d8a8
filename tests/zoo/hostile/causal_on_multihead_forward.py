"""CausalAttention.forward hands the work to F.multi_head_attention_forward (nn.MultiheadAttention's
engine), with its own projections, in a stage whose point is to write attention by hand."""
MODULE = "causal"
LOSES = ["s3.causal.[!m]*"]
MENTIONS = "nn.MultiheadAttention"

import torch.nn.functional as F


class CausalAttention(CausalAttention):
    def forward(self, x):
        n, d_out = x.shape[1], self.W_query.out_features
        q, k, v = (t.transpose(0, 1) for t in (x, x, x))
        out, _ = F.multi_head_attention_forward(
            q, k, v, d_out, 1, None, None, None, None, False, 0.0,
            torch.eye(d_out, device=x.device, dtype=x.dtype), None, training=self.training,
            need_weights=False, attn_mask=self.mask.bool()[:n, :n], use_separate_proj_weight=True,
            q_proj_weight=self.W_query.weight, k_proj_weight=self.W_key.weight, v_proj_weight=self.W_value.weight)
        return out.transpose(0, 1)
