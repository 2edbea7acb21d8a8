"""rope_tables accepts an odd head_dim and returns tables one column too wide."""
MODULE = "frontier"
LOSES = ['s9.rope.odd']
ONLY = True


def rope_tables(head_dim, context_length, base=10000.0):
    frequencies = base ** (-torch.arange(0, head_dim, 2, dtype=torch.float32) / head_dim)
    angles = torch.arange(context_length, dtype=torch.float32)[:, None] * frequencies
    angles = torch.cat([angles, angles], dim=-1)
    return angles.cos(), angles.sin()
