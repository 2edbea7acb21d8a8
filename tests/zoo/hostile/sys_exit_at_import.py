"""Calls sys.exit(0) while simple.py is imported, hoping a grader reads exit code 0 as success."""
MODULE = "simple"
LOSES = ["s1.*"]
MENTIONS = "exited during import of attention_lab/simple.py"

import sys

sys.exit(0)
