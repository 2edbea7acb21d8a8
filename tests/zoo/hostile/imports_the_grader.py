"""softmax_naive tries to import the grader (its golden data, its checks) and the reference
solution, and answers with the reference when it can; otherwise it is wrong."""
MODULE = "simple"
LOSES = ["s1.softmax_naive"]
MENTIONS = "softmax_naive(inputs @ inputs[1])"

import importlib


def softmax_naive(scores):
    for name in ("solutions.attention_lab.simple", "autograder.grading.golden", "autograder.grading.checks.stage1"):
        try:
            found = importlib.import_module(name)
        except BaseException:
            continue
        if hasattr(found, "softmax_naive") and found.softmax_naive is not softmax_naive:
            return found.softmax_naive(scores)
        raise RuntimeError(f"LEAKED: imported {name}")
    return torch.exp(scores)
