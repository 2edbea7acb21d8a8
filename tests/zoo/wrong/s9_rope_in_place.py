"""apply_rope rotates x in place (x.mul_(cos).add_(...)) and returns it: the feedback must say so first,
not the symptoms the changed input causes elsewhere."""
MODULE = "frontier"
LOSES = ["s9.rope.contract"]
MENTIONS = "apply_rope changed x in place"
ONLY = True


def apply_rope(x, cos, sin, offset=0):
    seq, half = x.shape[-2], x.shape[-1] // 2
    if offset + seq > cos.shape[0]:
        raise ValueError(f"positions {offset}..{offset + seq - 1} are past the tables' {cos.shape[0]} positions")
    cos, sin = cos[offset:offset + seq].to(x.dtype), sin[offset:offset + seq].to(x.dtype)
    rotated = torch.cat([-x[..., half:], x[..., :half]], dim=-1)
    return x.mul_(cos).add_(rotated * sin)
