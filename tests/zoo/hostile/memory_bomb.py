"""attention_weights_all allocates 256 MiB blocks until something stops it."""
MODULE = "simple"
LOSES = ["s1.attention_weights_all", "s1.context_vectors_all"]  # the second calls the first
MENTIONS = "memory"
BOUND = 60
# The same limit, met sooner: filling the real 4 GiB took 10-12 s of CPU, twice, for the same verdict.
LIMITS = {"MEMORY_LIMIT": 536870912}  # 512 MiB

blocks = []


def attention_weights_all(inputs):
    while True:
        blocks.append(torch.ones(2**26))
