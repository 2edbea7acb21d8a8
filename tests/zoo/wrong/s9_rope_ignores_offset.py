"""apply_rope always rotates from position 0: with a cache, a new token is rotated as if it were the first."""
MODULE = "frontier"
LOSES = ['s9.rope.offset', 's9.ropegqa.cache', 's9.ropegqa.pieces']
MENTIONS = 'as if its first token were at position 0'


def apply_rope(x, cos, sin, offset=0):
    seq, half = x.shape[-2], x.shape[-1] // 2
    rotated = torch.cat([-x[..., half:], x[..., :half]], dim=-1)
    return x * cos[:seq].to(x.dtype) + rotated * sin[:seq].to(x.dtype)
