"""normalize_by_sum writes files from C++ with torch.from_file(..., shared=True), which Python's
audit hook never sees: a .pth in the grading Python's site-packages (run by every later grading),
a file in /tmp and one beside the submission; each would outlive grading."""
MODULE = "simple"
NEEDS_KERNEL = "torch writes files in C++, out of sight of Python's audit hooks: only the kernel stops it"
LEAVES = ["@SITE@/zz-attention-lab-zoo.pth", "@TMP@/attention-lab-zoo-from-file", "@PARENT@/planted-by-student"]
LOSES = ["s1.normalize_by_sum"]
MENTIONS = "wrote nothing"


def normalize_by_sum(scores):
    denied = []
    for path in ("@SITE@/zz-attention-lab-zoo.pth", "@TMP@/attention-lab-zoo-from-file", "@PARENT@/planted-by-student"):
        try:
            t = torch.from_file(path, shared=True, size=64, dtype=torch.uint8)
            t[:] = torch.tensor(list(b"import sys; print('LEAKED', file=sys.stderr)".ljust(64)), dtype=torch.uint8)
        except RuntimeError as exc:
            denied.append(f"{path.rsplit('/', 1)[-1]}: {str(exc).splitlines()[0][:80]}")
    raise RuntimeError("wrote nothing: " + "; ".join(denied))
