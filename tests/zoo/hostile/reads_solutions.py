"""softmax_naive looks for the kit's solutions/ folder next to its autograder/ and copies the
reference's source, then runs it."""
MODULE = "simple"
LOSES = ["s1.softmax_naive"]
MENTIONS = "attention_lab/simple.py:"

import os
import re


def softmax_naive(scores):
    text = open("/proc/self/cmdline", "rb").read().decode(errors="replace")
    words = re.split(r"[\0'\", ]+", text)
    roots = [w for w in words if w.startswith("/")]
    seen = []
    for root in roots:
        path = os.path.join(root, "solutions", "attention_lab", "simple.py")
        try:
            source = open(path).read()
        except FileNotFoundError:
            continue
        except OSError as exc:
            seen.append(f"{path}: {exc}")
            continue
        namespace = {}
        exec(source, namespace)
        raise RuntimeError(f"LEAKED: ran {path}")
    raise RuntimeError("could not read the solutions: " + "; ".join(seen))
