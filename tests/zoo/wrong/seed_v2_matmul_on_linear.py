"""The first chapter notes' ``SelfAttention_v2`` (section 3.4.2), typed in as printed: its forward
keeps v1's ``x @ self.W_key``, but an ``nn.Linear`` is a layer to call, not a matrix, so it raises."""
MODULE = "self_attention"
LOSES = ["s2.v2.seeded", "s2.v2.known_weights", "s2.copy_v2_into_v1"]
MENTIONS = "TypeError"


class SelfAttention_v2(nn.Module):

    def __init__(self, d_in, d_out, qkv_bias=False):
        super().__init__()
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key   = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)

    def forward(self, x):
        keys = x @ self.W_key
        queries = x @ self.W_query
        values = x @ self.W_value
        
        attn_scores = queries @ keys.T # omega
        attn_weights = torch.softmax(
            attn_scores / keys.shape[-1]**0.5, dim=-1
        )

        context_vec = attn_weights @ values
        return context_vec
