"""padding_mask ignores pad_id and compares with 0, the usual padding id."""
MODULE = "transformer"
LOSES = ["s7.padding_mask"]
MENTIONS = "pad_id=2"
ONLY = True


def padding_mask(tokens, pad_id):
    return (tokens != 0).unsqueeze(-2)
