"""softmax_naive finds the kit's folder from the command lines and working folders in /proc and
opens its golden data with Python's open()."""
MODULE = "simple"
LOSES = ["s1.softmax_naive"]
MENTIONS = "golden/golden.pt:"

import os
import re


def kit_candidates():
    """Every folder named in this process's and its parent's command line, or their working folder."""
    texts = []
    for pid in ("self", str(os.getppid())):
        for what in ("cmdline", "environ"):
            try:
                texts.append(open(f"/proc/{pid}/{what}", "rb").read().decode(errors="replace"))
            except OSError:
                pass
        try:
            texts.append(os.readlink(f"/proc/{pid}/cwd"))
        except OSError:
            pass
    paths = set(re.findall(r"/[\w./-]+", "\n".join(texts)))
    found = []
    for path in paths:
        while path not in ("", "/"):
            found.append(os.path.join(path, "autograder", "grading", "golden", "golden.pt"))
            path = os.path.dirname(path)
    return sorted(set(found))


def softmax_naive(scores):
    seen = []
    for path in kit_candidates():
        try:
            open(path, "rb").read()
        except FileNotFoundError:
            continue
        except OSError as exc:
            seen.append(f"{path}: {exc}")
            continue
        raise RuntimeError(f"LEAKED: read {path}")
    raise RuntimeError("could not read golden.pt: " + "; ".join(seen))
