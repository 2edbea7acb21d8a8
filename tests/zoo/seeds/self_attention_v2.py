"""``SelfAttention_v2`` as the second set of chapter notes prints it (section 3), typed in as printed.

The first set of notes prints ``x @ self.W_key`` in its forward, a slip that raises (an ``nn.Linear``
is not a matrix); ``tests/zoo/wrong/seed_v2_matmul_on_linear.py`` holds that version."""
MODULE = "self_attention"
DIFFERS = {}


class SelfAttention_v2(nn.Module):

    def __init__(self, d_in, d_out, qkv_bias=False):
        super().__init__()
        # nn.Linear 的一个重要优势是它提供了优化的权重初始化方案，从而有助于模型训练的稳定性和有效性
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key   = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)

    def forward(self, x):
        keys = self.W_key(x)
        queries = self.W_query(x)
        values = self.W_value(x)
        
        attn_scores = queries @ keys.T
        attn_weights = torch.softmax(attn_scores / keys.shape[-1]**0.5, dim=-1)

        context_vec = attn_weights @ values
        return context_vec
