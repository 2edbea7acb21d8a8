"""subsequent_mask returns torch.tril(torch.ones(1, size, size)), a float mask, not a bool one: combining it with a padding mask by & fails."""
MODULE = "transformer"
LOSES = ["s7.subsequent_mask"]
MENTIONS = "torch.bool"
ONLY = True


def subsequent_mask(size):
    return torch.tril(torch.ones(1, size, size))
