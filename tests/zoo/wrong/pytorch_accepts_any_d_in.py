"""MultiHeadAttentionPyTorch drops the d_in == d_out check, so a mismatched layer is built and fails later."""
MODULE = "multihead"
LOSES = ["s4.pytorch.known_weights"]
MENTIONS = "should raise ValueError"
ONLY = True


class MultiHeadAttentionPyTorch(nn.Module):
    def __init__(self, d_in, d_out, context_length, dropout, num_heads, qkv_bias=False):
        super().__init__()
        self.mha = nn.MultiheadAttention(d_out, num_heads, dropout=dropout, bias=qkv_bias, batch_first=True)
        self.register_buffer("mask", torch.triu(torch.ones(context_length, context_length, dtype=torch.bool), 1))

    def forward(self, x):
        n = x.shape[1]
        return self.mha(x, x, x, attn_mask=self.mask[:n, :n], need_weights=False)[0]
