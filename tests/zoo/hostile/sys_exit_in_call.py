"""softmax_naive calls sys.exit(0) when called, so that a grader's process would stop there."""
MODULE = "simple"
LOSES = ["s1.softmax_naive"]
MENTIONS = "called sys.exit(0)"

import sys


def softmax_naive(scores):
    sys.exit(0)
