"""The chapter notes' second ``nn.MultiheadAttention`` version (section 3.6.2: x goes into the layer
directly, batch_first), typed in as printed, in the contract's ``MultiHeadAttentionPyTorch`` slot.

The notes call it ``MultiHeadAttention``, the name of the hand-written layer: the lines around the
class put it in the PyTorch slot and keep the hand-written one where it was. It adds an ``out_proj``
after ``nn.MultiheadAttention``, which already ends in its own output projection (``mha.out_proj``),
so it computes another function than the contract's layer (and it does not refuse d_in != d_out)."""
MODULE = "multihead"
DIFFERS = {"s4.pytorch.known_weights": "already ends in its own output projection"}

_hand_written = MultiHeadAttention


class MultiHeadAttention(nn.Module):
    def __init__(self, d_in, d_out, context_length, dropout, num_heads, qkv_bias=False, need_weights=True):
        super().__init__()

        self.context_length = context_length
        self.d_out = d_out
        self.num_heads = num_heads
        self.mha = nn.MultiheadAttention(embed_dim=d_out, num_heads=num_heads, 
                                         dropout=dropout, batch_first=True)

        self.need_weights = need_weights
        self.out_proj = nn.Linear(d_out, d_out)
        self.register_buffer(
            "mask",
            torch.triu(torch.ones(context_length, context_length), diagonal=1).bool()
        )

    def forward(self, x):
        b, num_tokens, d_in = x.shape

        if self.context_length >= num_tokens:
            attn_mask = self.mask[:num_tokens, :num_tokens]
        else:
            attn_mask = self.mask[:self.context_length, :self.context_length]

        # attn_mask broadcasting will handle batch_size dimension implicitly
        attn_output, _ = self.mha(
            x, x, x, attn_mask=attn_mask, need_weights=self.need_weights
        )
        
        output = self.out_proj(attn_output)

        return output


MultiHeadAttentionPyTorch, MultiHeadAttention = MultiHeadAttention, _hand_written
