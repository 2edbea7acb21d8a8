"""padding_mask returns (tokens != pad_id) of shape (batch, seq), without the middle axis that lets it serve every query."""
MODULE = "transformer"
LOSES = ["s7.padding_mask"]
MENTIONS = "middle axis"
ONLY = True


def padding_mask(tokens, pad_id):
    return tokens != pad_id
