"""rope_tables uses base ** (-i / head_dim) for pair i, where the formula has 2i."""
MODULE = "frontier"
LOSES = ['s9.rope.tables', 's9.ropegqa.known']


def rope_tables(head_dim, context_length, base=10000.0):
    if head_dim % 2:
        raise ValueError("head_dim must be even")
    frequencies = base ** (-torch.arange(head_dim // 2, dtype=torch.float32) / head_dim)
    angles = torch.arange(context_length, dtype=torch.float32)[:, None] * frequencies
    angles = torch.cat([angles, angles], dim=-1)
    return angles.cos(), angles.sin()
