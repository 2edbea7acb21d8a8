"""softmax_naive keeps rewriting a "task in progress" mark in its working folder (where the grader once
read the child's word on its progress), back and forth between two tasks, so that a watchdog that
restarted its clock on every change would never time anything out. Each request's clock is the
grader's, started when it asks."""
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
