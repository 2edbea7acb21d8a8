"""rope_tables with torch.outer and repeat, the frequencies as 1 / base ** (2i / d)."""
MODULE = "frontier"


def rope_tables(head_dim, context_length, base=10000.0):
    if head_dim % 2 == 1:
        raise ValueError(f"odd head_dim {head_dim}")
    inv_freq = 1.0 / (base ** (torch.arange(0, head_dim, 2).float() / head_dim))
    freqs = torch.outer(torch.arange(context_length).float(), inv_freq).repeat(1, 2)
    return torch.cos(freqs), torch.sin(freqs)
