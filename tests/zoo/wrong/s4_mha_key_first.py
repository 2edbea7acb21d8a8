"""MultiHeadAttention creates W_key before W_query (our own code, the contract's layer but for that order).
Loaded by name it computes the contract's function; under ``torch.manual_seed(123)`` each projection draws
other numbers, so the book's printed example cannot come out, and the feedback names the order."""
MODULE = "multihead"
LOSES = ["s4.mha.seeded"]
ONLY = True
MENTIONS = "in the order W_key, W_query, W_value, out_proj"

class MultiHeadAttention(MultiHeadAttention):
    def __init__(self, d_in, d_out, context_length, dropout, num_heads, qkv_bias=False):
        nn.Module.__init__(self)
        if d_out % num_heads != 0:
            raise ValueError(f"d_out ({d_out}) must be divisible by num_heads ({num_heads})")
        self.d_out = d_out
        self.num_heads = num_heads
        self.head_dim = d_out // num_heads
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.out_proj = nn.Linear(d_out, d_out)
        self.dropout = nn.Dropout(dropout)
        self.register_buffer("mask", torch.triu(torch.ones(context_length, context_length), diagonal=1))
