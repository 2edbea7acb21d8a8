"""apply_rope pairs neighbouring dimensions 2i and 2i+1 (the interleaved layout of the RoPE paper) with the lab's rotate-half tables."""
MODULE = "frontier"
LOSES = ['s9.rope.formula', 's9.rope.offset']
MENTIONS = 'your pairs look interleaved'


def apply_rope(x, cos, sin, offset=0):
    seq = x.shape[-2]
    half = cos.shape[-1] // 2
    c = cos[offset:offset + seq, :half].repeat_interleave(2, -1).to(x.dtype)
    s = sin[offset:offset + seq, :half].repeat_interleave(2, -1).to(x.dtype)
    swapped = torch.stack([-x[..., 1::2], x[..., 0::2]], dim=-1).flatten(-2)
    return x * c + swapped * s
