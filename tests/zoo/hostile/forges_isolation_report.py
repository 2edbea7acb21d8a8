"""softmax_naive rewrites the child's report of what confined it (in the folder it may write),
claiming layers it does not have; the report the grader states must be the one written before any
student code ran."""
MODULE = "simple"
LOSES = ["s1.softmax_naive"]
MENTIONS = "rewrote the report"

import json


def softmax_naive(scores):
    with open("layers.json", "w") as f:
        json.dump({"landlock": 99, "root": True, "network": True, "landlock_why": "LEAKED"}, f)
    raise RuntimeError("rewrote the report")
