"""CausalAttention creates W_key before W_query, as the "Let's build GPT" lecture's ``Head`` and the many
tutorials that follow it do (``self.key``, then ``self.query``, then ``self.value``); our own code, the contract's
layer but for that order. Loaded by name it computes the contract's function; under
``torch.manual_seed(123)`` each projection draws other numbers, so the book's printed example cannot come out,
and the feedback names the order. Stage 4's wrapper is built from these heads, so its seeded example goes too."""
MODULE = "causal"
LOSES = ["s3.causal.seeded", "s4.wrapper.seeded"]
ONLY = True
MENTIONS = {"s3.causal.seeded": "creates its weights in the order W_key, W_query, W_value",
            "s4.wrapper.seeded": "creates heads.0's weights in the order W_key, W_query, W_value"}

class CausalAttention(CausalAttention):
    def __init__(self, d_in, d_out, context_length, dropout, qkv_bias=False):
        nn.Module.__init__(self)
        self.d_out = d_out
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.dropout = nn.Dropout(dropout)
        self.register_buffer("mask", torch.triu(torch.ones(context_length, context_length), diagonal=1))
