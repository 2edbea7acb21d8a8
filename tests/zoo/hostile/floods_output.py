"""normalize_by_sum writes to stderr (and stdout) without end."""
MODULE = "simple"
LOSES = ["s1.normalize_by_sum"]
MENTIONS = "File too large"
BOUND = 40

import sys

CHUNK = "x" * 2**20


def normalize_by_sum(scores):
    while True:
        sys.stdout.write(CHUNK)
        sys.stderr.write(CHUNK)
