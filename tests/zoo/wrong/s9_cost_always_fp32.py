"""kv_cache_bytes counts 4 bytes per number whatever the dtype."""
MODULE = "frontier"
LOSES = ['s9.cost']
MENTIONS = '4 bytes per number'
ONLY = True


_kv_cache_bytes = kv_cache_bytes


def kv_cache_bytes(*args, dtype="bf16", **kwargs):
    return _kv_cache_bytes(*args, dtype="fp32", **kwargs) if dtype in BYTES_PER_NUMBER else _kv_cache_bytes(
        *args, dtype=dtype, **kwargs)
