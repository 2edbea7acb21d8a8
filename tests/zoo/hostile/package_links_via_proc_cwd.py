"""attention_lab -> /proc/self/cwd/solutions/attention_lab: the reference, reached through the
working folder of whoever follows the link (the grader runs from the kit's checkout)."""
MODULE = "causal"
LINKS = {"attention_lab": "/proc/self/cwd/solutions/attention_lab"}
LOSES = ["s3.*"]
MENTIONS = "symbolic link"
REFUSED = "attention_lab/ is a symbolic link"
