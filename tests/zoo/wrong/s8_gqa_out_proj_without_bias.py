"""GroupedQueryAttention's out_proj has no bias (as Llama-family layers have it), where the contract asks for one.
One slip, priced once: only the structure check that is about the parameters fails (2 points); every check that
loads known weights gives the layer the bias it lacks and measures its own concept, in stage 8 and in stage 9's
rotary layer, which extends this one (13 checks and 30 points were lost before). The feedback names the student's
own class and parameter, never the probes' wrapper around it ("Output", "inner.out_proj.bias")."""
MODULE = "modern"
LOSES = ["s8.gqa.parameters"]
ONLY = True
MENTIONS = "has no parameter out_proj.bias"


class GroupedQueryAttention(GroupedQueryAttention):
    def __init__(self, d_in, d_out, context_length, num_heads, num_kv_heads, dropout=0.0, qkv_bias=False):
        super().__init__(d_in, d_out, context_length, num_heads, num_kv_heads, dropout, qkv_bias)
        self.out_proj = nn.Linear(d_out, d_out, bias=False)
