"""subsequent_mask is triu(ones, diagonal=1) == 0 shifted by one (tril with diagonal=-1): a position does not even see itself."""
MODULE = "transformer"
LOSES = ["s7.subsequent_mask"]
MENTIONS = "must see itself"
ONLY = True


def subsequent_mask(size):
    return torch.tril(torch.ones(1, size, size, dtype=torch.bool), diagonal=-1)
