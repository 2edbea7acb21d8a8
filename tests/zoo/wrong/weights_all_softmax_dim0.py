"""attention_weights_all takes the softmax over dim=0 (columns), so the rows do not sum to 1."""
MODULE = "simple"
LOSES = ["s1.attention_weights_all", "s1.context_vectors_all"]
MENTIONS = {"s1.attention_weights_all": "sums to",
            # context_vectors_all calls attention_weights_all: its feedback names that as the cause
            "s1.context_vectors_all": "this passes: the mistake is in your attention_weights_all; look there first"}
ONLY = True


def attention_weights_all(inputs):
    return torch.softmax(inputs @ inputs.T, dim=0)
