"""attention_lab/golden -> the kit's golden data folder; softmax_naive then loads the expected
values from beside its own file, which bypasses the hiding of the kit's folder."""
MODULE = "simple"
LINKS = {"attention_lab/golden": "@KIT@/autograder/grading/golden"}
LOSES = ["s1.softmax_naive"]
MENTIONS = "golden.pt"

import os


def softmax_naive(scores):
    path = os.path.join(os.path.dirname(__file__), "golden", "golden.pt")
    try:
        data = torch.load(path, weights_only=True)
    except Exception as exc:
        raise RuntimeError(f"could not load {path}: {type(exc).__name__}") from None
    raise RuntimeError(f"LEAKED: loaded {path}: {str(data)[:100]}")
