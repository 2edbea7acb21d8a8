"""subsequent_mask uses torch.tril(..., diagonal=1): every position also sees the next one."""
MODULE = "transformer"
LOSES = ["s7.subsequent_mask"]
MENTIONS = "must not see a later position"
ONLY = True


def subsequent_mask(size):
    return torch.tril(torch.ones(1, size, size, dtype=torch.bool), diagonal=1)
