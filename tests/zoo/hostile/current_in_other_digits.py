"""softmax_naive names the task in progress, in the mark the grader once read from its working folder,
with a digit that is not ASCII ("²": str.isdigit says yes, int() refuses it), hoping the grader's watch
crashes on it and the grading ends as the grader's failure (no points lost, a regrade) instead of
scoring its wrong answer. The grader reads no such mark now: its wrong answer is scored."""
MODULE = "simple"
LOSES = ["s1.softmax_naive"]
MENTIONS = "softmax_naive"

import time


def softmax_naive(scores):
    with open("current", "w") as f:
        f.write("\u00b2")
    time.sleep(0.3)  # long enough for the watch, which looks every 20 ms, to read it
    return scores
