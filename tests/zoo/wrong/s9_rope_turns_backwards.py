"""rotate_half written as cat(x2, -x1): every pair turns by minus its angle."""
MODULE = "frontier"
LOSES = ['s9.rope.formula']
MENTIONS = 'the wrong way'


def apply_rope(x, cos, sin, offset=0):
    seq, half = x.shape[-2], x.shape[-1] // 2
    rotated = torch.cat([x[..., half:], -x[..., :half]], dim=-1)
    return x * cos[offset:offset + seq].to(x.dtype) + rotated * sin[offset:offset + seq].to(x.dtype)
