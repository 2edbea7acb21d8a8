"""normalize_by_sum divides by the largest score instead of the sum, so the weights do not add up to 1."""
MODULE = "simple"
LOSES = ["s1.normalize_by_sum"]
MENTIONS = "normalize_by_sum(inputs @ inputs[1])"


def normalize_by_sum(scores):
    return scores / scores.max()
