"""softmax_naive reads what lies around the submission on the grading machine: a classmate's
module, the course's source notebook, nbgrader's gradebook (planted beside it), a file in the
grader's home, and the kit's checkout; through open() and os.open (in case the audit hook is
bypassed, only the kernel stands between); it reports what it read in its exception."""
MODULE = "simple"
NEEDS_KERNEL = "a file outside the submission, read from Python: the audit hook refuses only the kit by name, so the kernel must stop the rest"
PLANT = {
    "@BESIDE@/submitted/classmate/attention/attention_lab/causal.py": "LEAKED: a classmate's causal.py",
    "@BESIDE@/source/attention/stage3_causal.ipynb": "LEAKED: ### BEGIN SOLUTION",
    "@BESIDE@/gradebook.db": "LEAKED: nbgrader's gradebook",
    "@HOME@/.attention-lab-zoo-home-secret": "LEAKED: a file in the grader's home",
}
LOSES = ["s1.softmax_naive"]
MENTIONS = "read nothing"

import os


def softmax_naive(scores):
    targets = ["@BESIDE@/submitted/classmate/attention/attention_lab/causal.py",
               "@BESIDE@/source/attention/stage3_causal.ipynb", "@BESIDE@/gradebook.db",
               "@HOME@/.attention-lab-zoo-home-secret", "@KIT@/README.md", "@KIT@/tests/zoo/hostile/"]
    seen, denied = [], []
    for path in targets:
        for how in ("open", "os.open"):
            try:
                if path.endswith("/"):
                    seen.append(f"listed {path}: {os.listdir(path)[:3]}")
                elif how == "open":
                    seen.append(open(path).read()[:60])
                else:
                    fd = os.open(path, os.O_RDONLY)
                    seen.append(os.read(fd, 60).decode(errors="replace"))
            except OSError as exc:
                denied.append(f"{os.path.basename(path.rstrip('/'))} ({how}): {exc.strerror}")
    if seen:
        raise RuntimeError("LEAKED: " + " | ".join(seen))
    raise RuntimeError("read nothing: " + "; ".join(denied))
