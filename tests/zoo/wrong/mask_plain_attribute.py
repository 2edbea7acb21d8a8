"""CausalAttention keeps the mask as a plain tensor attribute, not a registered buffer."""
MODULE = "causal"
LOSES = ["s3.causal.mask_buffer", "s3.causal.device", "s3.causal.state_dict"]
MENTIONS = "not a registered buffer"


class CausalAttention(CausalAttention):
    def __init__(self, d_in, d_out, context_length, dropout, qkv_bias=False):
        nn.Module.__init__(self)
        self.d_out = d_out
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.dropout = nn.Dropout(dropout)
        self.mask = torch.triu(torch.ones(context_length, context_length), diagonal=1)
