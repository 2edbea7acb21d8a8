"""The chapter notes' first ``nn.MultiheadAttention`` version (section 3.6.2: its own query, key and
value projections in front, sequence-first), typed in as printed, in the contract's
``MultiHeadAttentionPyTorch`` slot (the notes call it ``MultiHeadAttention``; the lines around the
class put it in the PyTorch slot and keep the hand-written layer where it was).

``nn.MultiheadAttention`` projects queries, keys and values itself and ends in its own output
projection; the extra ``W_query``, ``W_key``, ``W_value`` and ``out_proj`` around it make it compute
another function than the contract's layer (the notes say as much: "实际不需要")."""
MODULE = "multihead"
DIFFERS = {"s4.pytorch.known_weights": "already ends in its own output projection"}

_hand_written = MultiHeadAttention


class MultiHeadAttention(nn.Module):
    def __init__(self, d_in, d_out, context_length, dropout, num_heads, qkv_bias=False):
        super().__init__()

        self.d_out = d_out
        self.num_heads = num_heads
        self.mha = nn.MultiheadAttention(embed_dim=d_out, num_heads=num_heads, dropout=dropout)

        # 方便演示所以设置, 实际nn.MultiheadAttention内部实现已经完成了对 query、key 和 value 的线性变换
        # 因此，可以直接传入 x，而不需要自己预先生成这三个不同的变换中QKV均是x
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)

        self.out_proj = nn.Linear(d_out, d_out)
        self.register_buffer(
            "mask",
            torch.triu(torch.ones(context_length, context_length), diagonal=1)
        )

    def forward(self, x):
        b, num_tokens, d_in = x.shape

        # Apply the projection layers to the input x
        queries = self.W_query(x)  # Shape: (b, num_tokens, d_out)
        keys = self.W_key(x)
        values = self.W_value(x)

        # Reshape the input for nn.MultiheadAttention, which expects (sequence_length, batch_size, embedding_dim)
        queries = queries.transpose(0, 1)  # Shape: (num_tokens, b, d_out)
        keys = keys.transpose(0, 1)
        values = values.transpose(0, 1)

        # Apply causal mask if needed
        attn_mask = self.mask[:num_tokens, :num_tokens].bool()

        # Get the attention output
        attn_output, _ = self.mha(queries, keys, values, attn_mask=attn_mask)

        # Return the output of the attention
        output = attn_output.transpose(0, 1)  # Back to (b, num_tokens, d_out)
        output = self.out_proj(output)

        return output


MultiHeadAttentionPyTorch, MultiHeadAttention = MultiHeadAttention, _hand_written
