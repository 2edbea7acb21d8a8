"""GroupedQueryAttention's out_proj has no bias (as Llama-family layers have it), where the contract asks for one.
The feedback names the student's own class and parameter, never the probes' wrapper around it ("Output",
"inner.out_proj.bias"). How many checks this one slip costs is issue 27's credit-by-concept work, not pinned here."""
MODULE = "modern"
LOSES = ["s8.gqa.as_mha", "s8.gqa.parameters"]
MENTIONS = "GroupedQueryAttention has no parameter named 'out_proj.bias'"


class GroupedQueryAttention(GroupedQueryAttention):
    def __init__(self, d_in, d_out, context_length, num_heads, num_kv_heads, dropout=0.0, qkv_bias=False):
        super().__init__(d_in, d_out, context_length, num_heads, num_kv_heads, dropout, qkv_bias)
        self.out_proj = nn.Linear(d_out, d_out, bias=False)
