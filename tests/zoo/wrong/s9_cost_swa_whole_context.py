"""kv_cache_bytes gives a sliding window the cache of the whole context."""
MODULE = "frontier"
LOSES = ['s9.cost']
MENTIONS = 'the whole context'
ONLY = True


_kv_cache_bytes = kv_cache_bytes


def kv_cache_bytes(kind, batch, context_length, n_layers, emb_dim, n_heads, n_kv_heads=None, latent_dim=None,
                   window=None, dtype="bf16"):
    if kind == "swa":
        if window is None:
            raise ValueError("swa needs window")
        return _kv_cache_bytes("gqa", batch, context_length, n_layers, emb_dim, n_heads, n_kv_heads or n_heads,
                               dtype=dtype)
    return _kv_cache_bytes(kind, batch, context_length, n_layers, emb_dim, n_heads, n_kv_heads, latent_dim, window,
                           dtype)
