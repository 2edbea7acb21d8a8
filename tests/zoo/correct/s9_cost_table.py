"""kv_cache_bytes from a table of numbers per token and math.prod."""
MODULE = "frontier"


import math


def kv_cache_bytes(kind, batch, context_length, n_layers, emb_dim, n_heads, n_kv_heads=None, latent_dim=None,
                   window=None, dtype="bf16"):
    sizes = {"fp32": 4, "fp16": 2, "bf16": 2, "fp8": 1}
    needs = {"gqa": n_kv_heads, "mla": latent_dim, "swa": window, "mha": True}
    if kind not in needs or dtype not in sizes:
        raise ValueError(f"unknown kind or dtype: {kind}, {dtype}")
    if needs[kind] is None:
        raise ValueError(f"{kind} needs its own argument")
    head_dim = emb_dim // n_heads
    per_token = {"mha": 2 * n_heads * head_dim, "gqa": 2 * (n_kv_heads or 0) * head_dim,
                 "mla": latent_dim, "swa": 2 * (n_kv_heads or n_heads) * head_dim}[kind]
    tokens = min(context_length, window) if kind == "swa" else context_length
    return math.prod([batch, tokens, n_layers, per_token, sizes[dtype]])
