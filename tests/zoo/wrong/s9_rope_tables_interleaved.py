"""rope_tables repeats each angle in two neighbouring columns (interleaved) instead of two halves."""
MODULE = "frontier"
LOSES = ['s9.rope.tables']
MENTIONS = 'interleaved'


def rope_tables(head_dim, context_length, base=10000.0):
    if head_dim % 2:
        raise ValueError("head_dim must be even")
    frequencies = base ** (-torch.arange(0, head_dim, 2, dtype=torch.float32) / head_dim)
    angles = torch.arange(context_length, dtype=torch.float32)[:, None] * frequencies
    angles = angles.repeat_interleave(2, dim=-1)
    return angles.cos(), angles.sin()
