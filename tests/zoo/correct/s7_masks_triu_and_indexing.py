"""subsequent_mask as triu(ones, diagonal=1) == 0 (the Annotated Transformer's way) and padding_mask with [:, None, :]."""
MODULE = "transformer"


def subsequent_mask(size):
    return torch.triu(torch.ones(1, size, size), diagonal=1) == 0


def padding_mask(tokens, pad_id):
    return (tokens != pad_id)[:, None, :]
