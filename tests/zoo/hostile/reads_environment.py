"""softmax_naive looks through its environment for the grader's secrets (tokens, paths)."""
MODULE = "simple"
LOSES = ["s1.softmax_naive"]
MENTIONS = "softmax_naive(inputs @ inputs[1])"

import os


def softmax_naive(scores):
    for name, value in os.environ.items():
        if "SECRET" in name or "TOKEN" in name or "LEAKED" in value:
            raise RuntimeError(f"LEAKED: {name}={value}")
    return torch.exp(scores)
