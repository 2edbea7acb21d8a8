"""Calls os._exit(0) while simple.py is imported: the process ends at once, with exit code 0."""
MODULE = "simple"
LOSES = ["s1.*"]
MENTIONS = "exited during import of attention_lab/simple.py"

import os

os._exit(0)
