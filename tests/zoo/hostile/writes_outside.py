"""normalize_by_sum tries to leave a file in /tmp and to overwrite the kit's golden data."""
MODULE = "simple"
LOSES = ["s1.normalize_by_sum"]
MENTIONS = "write outside its sandbox"


def normalize_by_sum(scores):
    with open("/tmp/attention-lab-was-here", "w") as f:
        f.write("hello")
    return scores / scores.sum()
