"""softmax_naive writes the child's own "done" mark into the folder the grader watches, then
sleeps: a watchdog that trusted the mark would stop timing the child, and grading would never end."""
MODULE = "simple"
LOSES = ["s1.softmax_naive"]
MENTIONS = "did not end after its last check"
TIMEOUT = 1  # it waits out every limit it meets: a shorter one shows the same, sooner
BOUND = 40

import time


def softmax_naive(scores):
    with open("current", "w") as f:  # the child's working folder is its output folder
        f.write("done")
    time.sleep(3600)
