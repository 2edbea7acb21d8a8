"""apply_rope multiplies x by the float32 tables without casting them to x's dtype: right in float32 and
float64 (where promotion hides it), but a bfloat16 x comes back float32, against the contract."""
MODULE = "frontier"
LOSES = ["s9.rope.contract"]
MENTIONS = "apply_rope of a bfloat16 x returns float32"
ONLY = True


def apply_rope(x, cos, sin, offset=0):
    seq, half = x.shape[-2], x.shape[-1] // 2
    if offset + seq > cos.shape[0]:
        raise ValueError(f"positions {offset}..{offset + seq - 1} are past the tables' {cos.shape[0]} positions")
    cos, sin = cos[offset:offset + seq], sin[offset:offset + seq]
    return x * cos + torch.cat([-x[..., half:], x[..., :half]], dim=-1) * sin
