"""softmax_naive reads the golden data with torch.from_file, which opens the file in C++, where
Python's audit hooks do not reach."""
MODULE = "simple"
LOSES = ["s1.softmax_naive"]
MENTIONS = "golden/golden.pt:"
NEEDS_KERNEL = "torch reads files in C++, out of sight of Python's audit hooks: only the kernel stops it"

import os
import re


def softmax_naive(scores):
    # The kit's folder is in this process's own import path setup (its command line).
    text = open("/proc/self/cmdline", "rb").read().decode(errors="replace")
    words = re.split(r"[\0'\", ]+", text)
    roots = [w for w in words if w.startswith("/")]
    seen = []
    for root in roots:
        path = os.path.join(root, "autograder", "grading", "golden", "golden.pt")
        try:
            data = torch.from_file(path, size=16, dtype=torch.uint8)
        except RuntimeError as exc:
            seen.append(f"{path}: {str(exc).splitlines()[0]}")
            continue
        raise RuntimeError(f"LEAKED: read {path}: {data[:4].tolist()}")
    raise RuntimeError("could not read golden.pt: " + "; ".join(seen))
