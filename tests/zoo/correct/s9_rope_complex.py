"""apply_rope with complex numbers: dimension i and i + head_dim/2 as the real and imaginary parts, multiplied by e^(i angle)."""
MODULE = "frontier"


def apply_rope(x, cos, sin, offset=0):
    seq, half = x.shape[-2], x.shape[-1] // 2
    if offset + seq > cos.shape[0]:
        raise ValueError("positions past the tables")
    as_complex = torch.complex(x[..., :half].double(), x[..., half:].double())
    turn = torch.polar(torch.ones_like(cos[offset:offset + seq, :half]).double(),
                       torch.atan2(sin[offset:offset + seq, :half], cos[offset:offset + seq, :half]).double())
    turned = as_complex * turn
    return torch.cat([turned.real, turned.imag], dim=-1).to(x.dtype)
