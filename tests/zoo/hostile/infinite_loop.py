"""softmax_naive never returns: a busy loop."""
MODULE = "simple"
LOSES = ["s1.softmax_naive"]
MENTIONS = "timed out after 3 s"
BOUND = 30


def softmax_naive(scores):
    while True:
        pass
