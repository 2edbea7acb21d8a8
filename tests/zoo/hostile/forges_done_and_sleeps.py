"""softmax_naive writes a "done" mark into its working folder (the child's output folder, where the
grader once read the child's word on its progress), then sleeps: a watchdog that trusted such a mark
would stop timing the child, and grading would never end. The grader times each request itself, from
the moment it asks, and reads nothing the child says of its progress."""
MODULE = "simple"
LOSES = ["s1.softmax_naive"]
MENTIONS = "timed out"
TIMEOUT = 1  # it waits out every limit it meets: a shorter one shows the same, sooner
BOUND = 40

import time


def softmax_naive(scores):
    with open("current", "w") as f:  # the child's working folder is its output folder
        f.write("done")
    time.sleep(3600)
