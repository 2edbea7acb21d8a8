"""repeat_kv uses t.repeat(1, groups, 1, 1), which tiles the key/value heads (0, 1, 0, 1) instead of repeating each for its group (0, 0, 1, 1)."""
MODULE = "modern"
LOSES = ["s8.repeat_kv", "s8.gqa.grouped", "s8.cache.incremental", "s8.cache.pieces", "s8.cache.reset",
         "s9.ropegqa.known", "s9.ropegqa.cache", "s9.ropegqa.pieces"]  # stage 9's layers call this repeat_kv
MENTIONS = "tiled"
ONLY = True


def repeat_kv(t, groups):
    return t.repeat(1, groups, 1, 1)
