"""GroupedQueryAttention makes W_key and W_value d_out wide and gives every query head its own key/value head: multi-head attention again, with no savings."""
MODULE = "modern"
LOSES = ["s8.gqa.parameters", "s8.gqa.grouped", "s8.cache.heads", "s8.cache.incremental", "s8.cache.pieces",
         "s8.cache.reset", "s8.cache.context_limit", "s8.gqa.eval",
         # stage 9's rotary layer is built on this GroupedQueryAttention: the bug carries into it
         "s9.ropegqa.known", "s9.ropegqa.cache", "s9.ropegqa.pieces"]
MENTIONS = "key/value heads of"
ONLY = True


class GroupedQueryAttention(GroupedQueryAttention):
    def __init__(self, d_in, d_out, context_length, num_heads, num_kv_heads, dropout=0.0, qkv_bias=False):
        super().__init__(d_in, d_out, context_length, num_heads, num_kv_heads, dropout, qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.num_kv_heads = num_heads
