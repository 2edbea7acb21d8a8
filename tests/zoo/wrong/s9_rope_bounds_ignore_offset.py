"""apply_rope's bounds check ignores the offset (seq > rows, not offset + seq > rows): 5 tokens from position 2
in tables of 6 rows are let through and fail later, in the multiplication, with an error that does not say why."""
MODULE = "frontier"
LOSES = ["s9.rope.contract"]
ONLY = True
MENTIONS = "offset=2"


def apply_rope(x, cos, sin, offset=0):
    seq, half = x.shape[-2], x.shape[-1] // 2
    if seq > cos.shape[0]:
        raise ValueError(f"{seq} tokens are more than the tables' {cos.shape[0]} positions")
    cos = cos[offset:offset + seq].to(x.dtype)
    sin = sin[offset:offset + seq].to(x.dtype)
    return x * cos + torch.cat([-x[..., half:], x[..., :half]], dim=-1) * sin
