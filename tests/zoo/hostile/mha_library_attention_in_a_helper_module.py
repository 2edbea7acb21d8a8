"""MultiHeadAttention's attention done by nn.MultiheadAttention's own function with torch functions
switched off, in a helper module of the package (attention_lab/_impl.py) that multihead.py imports. With
its weights asked for, that function does its math with ordinary ops, as by hand: no check inside the
process can tell it from attention written by hand (docs/security.md), so the last layer is the
instructor, to whom the source review names it. The review once read only the course's module files, so
the same code that was flagged in multihead.py went unflagged in a helper. Every file that can run is
read now; and its answers, outputs like any other, are judged in the grading process."""
MODULE = "multihead"
STAGES = [4]
LOSES = []
MENTIONS = None
FLAGGED = "_impl.py line"
FILES = {"attention_lab/_impl.py": '''
import torch
import torch.nn.functional as F


def attend(queries, keys, values, heads, causal):
    """Multi-head attention by F.multi_head_attention_forward, its projections the identity."""
    batch, n, width = queries.shape
    eye = torch.eye(width, dtype=queries.dtype, device=queries.device)
    future = torch.ones(n, n, dtype=torch.bool, device=queries.device).triu(1) if causal else None
    with torch._C.DisableTorchFunction():
        out, _ = F.multi_head_attention_forward(
            queries.transpose(0, 1), keys.transpose(0, 1), values.transpose(0, 1), width, heads, None, None, None,
            None, False, 0.0, eye, torch.zeros(width, dtype=queries.dtype, device=queries.device), training=False,
            need_weights=True, attn_mask=future, use_separate_proj_weight=True, q_proj_weight=eye, k_proj_weight=eye,
            v_proj_weight=eye, average_attn_weights=False)
    return out.transpose(0, 1)
'''}

from attention_lab._impl import attend


class MultiHeadAttention(MultiHeadAttention):
    def forward(self, x):
        if self.training and self.dropout.p > 0:  # dropout: as the reference does it
            return super().forward(x)
        return self.out_proj(attend(self.W_query(x), self.W_key(x), self.W_value(x), self.num_heads, True))
