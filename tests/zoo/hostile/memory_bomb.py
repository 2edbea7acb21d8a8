"""attention_weights_all allocates 256 MiB blocks until something stops it."""
MODULE = "simple"
LOSES = ["s1.attention_weights_all", "s1.context_vectors_all"]  # the second calls the first
MENTIONS = "memory"
BOUND = 60
TIMEOUT = 10  # filling 4 GiB takes a few seconds

blocks = []


def attention_weights_all(inputs):
    while True:
        blocks.append(torch.ones(2**26))
