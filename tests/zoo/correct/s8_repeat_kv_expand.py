"""repeat_kv with expand then reshape: t[:, :, None] broadcast to (b, kv, groups, n, d), then merged into kv * groups heads."""
MODULE = "modern"


def repeat_kv(t, groups):
    b, kv, n, d = t.shape
    return t[:, :, None, :, :].expand(b, kv, groups, n, d).reshape(b, kv * groups, n, d)
