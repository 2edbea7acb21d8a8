"""softmax_naive keeps rewriting the child's "task in progress" mark, back and forth between two
tasks, so that a watchdog that restarts its clock on every change never times anything out."""
MODULE = "simple"
LOSES = ["s1.softmax_naive"]
MENTIONS = "timed out"
TIMEOUT = 1  # it waits out every limit it meets: a shorter one shows the same, sooner
BOUND = 40

import time


def softmax_naive(scores):
    for i in range(10**6):
        with open("current", "w") as f:
            f.write(str(i % 2))
        time.sleep(0.2)
