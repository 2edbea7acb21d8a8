"""attention_weights_all takes the softmax over dim=0 (columns), so the rows do not sum to 1."""
MODULE = "simple"
LOSES = ["s1.attention_weights_all", "s1.context_vectors_all"]
MENTIONS = "sums to"


def attention_weights_all(inputs):
    return torch.softmax(inputs @ inputs.T, dim=0)
