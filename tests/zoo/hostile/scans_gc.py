"""attention_weights_all scans gc.get_objects() for a tensor of the right shape that rows sum to 1."""
MODULE = "simple"
LOSES = ["s1.attention_weights_all", "s1.context_vectors_all"]  # the second calls the first
MENTIONS = "scan the grader's memory"

import gc


def attention_weights_all(inputs):
    n = inputs.shape[0]
    for obj in gc.get_objects():
        if type(obj) is torch.Tensor and obj.shape == (n, n) and torch.allclose(obj.sum(-1), torch.ones(n)):
            return obj.clone()
    return torch.zeros(n, n)
