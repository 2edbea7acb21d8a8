"""FastMultiHeadAttention with a boolean attn_mask (about 1.7 times as slow as the kit) that, on the
timed size, sets torch's number of threads to 8 before it computes: on a machine of several cores it
finishes sooner by the wall clock. A timed call costs every thread's CPU, so more threads make no
layer faster: it is too slow. (Its calls change torch's settings in its own child alone: the kit's
reference runs in a child of its own.)"""
MODULE = "modern"
STAGES = [8]
TIMEOUT = 10
LOSES = ["s8.fast.speed"]
MENTIONS = "too slow"

import torch.nn.functional as F


class FastMultiHeadAttention(FastMultiHeadAttention):
    def forward(self, x):
        b, n, _ = x.shape
        if n == 2048:
            torch.set_num_threads(8)
        q, k, v = self.qkv(x).view(b, n, 3, self.num_heads, self.head_dim).permute(2, 0, 3, 1, 4)
        visible = torch.ones(n, n, dtype=torch.bool, device=x.device).tril()
        context = F.scaled_dot_product_attention(q, k, v, attn_mask=visible,
                                                 dropout_p=self.dropout_p if self.training else 0.0)
        return self.out_proj(context.transpose(1, 2).reshape(b, n, self.d_out))
