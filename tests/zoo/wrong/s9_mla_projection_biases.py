"""MultiHeadLatentAttention's four projections have biases (nn.Linear's default), where the contract has none
but out_proj's. One slip, priced once: only s9.mla.structure fails, naming the extra parameters. The checks that
load known weights zero the biases they do not name, so dropout is not said to show a future token, nor eval
mode to differ from dropout=0 (the false diagnoses of before)."""
MODULE = "frontier"
LOSES = ["s9.mla.structure"]
ONLY = True
MENTIONS = "has a parameter the contract does not: W_query.bias, W_kv_down.bias, W_key_up.bias, W_value_up.bias"


class MultiHeadLatentAttention(MultiHeadLatentAttention):
    def __init__(self, d_in, d_out, context_length, num_heads, latent_dim, dropout=0.0):
        super().__init__(d_in, d_out, context_length, num_heads, latent_dim, dropout)
        self.W_query = nn.Linear(d_in, d_out)
        self.W_kv_down = nn.Linear(d_in, latent_dim)
        self.W_key_up = nn.Linear(latent_dim, d_out)
        self.W_value_up = nn.Linear(latent_dim, d_out)
