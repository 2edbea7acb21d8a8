"""kv_cache_bytes counts a key and a value for MLA's latent: twice its cache."""
MODULE = "frontier"
LOSES = ['s9.cost']
MENTIONS = 'twice too many'
ONLY = True


_kv_cache_bytes = kv_cache_bytes


def kv_cache_bytes(kind, *args, **kwargs):
    got = _kv_cache_bytes(kind, *args, **kwargs)
    return 2 * got if kind == "mla" else got
