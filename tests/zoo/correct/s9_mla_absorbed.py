"""MultiHeadLatentAttention with the up-projections absorbed, as DeepSeek runs inference: queries are mapped into the latent space, scores and values are computed against the cached latents themselves."""
MODULE = "frontier"


class MultiHeadLatentAttention(MultiHeadLatentAttention):
    def forward(self, x, cache=None):
        b, n, _ = x.shape
        past = 0 if cache is None else cache.shape[1]
        if past + n > self.mask.shape[0]:
            raise ValueError("the latent cache would grow past context_length")
        latents = self.W_kv_down(x) if cache is None else torch.cat([cache, self.W_kv_down(x)], dim=1)
        h, d = self.num_heads, self.head_dim
        w_k = self.W_key_up.weight.view(h, d, -1)      # per head: (d, latent)
        w_v = self.W_value_up.weight.view(h, d, -1)
        q = self.W_query(x).view(b, n, h, d).transpose(1, 2)          # (b, h, n, d)
        q_latent = torch.einsum("bhnd,hdl->bhnl", q, w_k)             # queries in the latent space
        scores = torch.einsum("bhnl,bml->bhnm", q_latent, latents) / d ** 0.5
        scores = scores.masked_fill(self.mask[past:past + n, :past + n], float("-inf"))
        weights = self.dropout(scores.softmax(dim=-1))
        mixed = torch.einsum("bhnm,bml->bhnl", weights, latents)      # a mix of latents per head
        context = torch.einsum("bhnl,hdl->bnhd", mixed, w_v).reshape(b, n, h * d)
        return self.out_proj(context), latents
