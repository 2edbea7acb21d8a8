"""attention_lab/notes.py -> a file only root may read; as root the grader would copy it into the
sandbox, readable by the child, and the module prints it into the feedback."""
MODULE = "simple"
PLANT = {"@BESIDE@/root-only.txt": ["LEAKED: a file only root may read", 0o600]}
LINKS = {"attention_lab/notes.py": "@BESIDE@/root-only.txt"}
LOSES = ["s1.softmax_naive"]
MENTIONS = "could not read notes.py"

import os


def softmax_naive(scores):
    path = os.path.join(os.path.dirname(__file__), "notes.py")
    try:
        text = open(path).read()
    except OSError as exc:
        raise RuntimeError(f"could not read notes.py: {exc.strerror}") from None
    raise RuntimeError(text)
