"""attention_lab/causal.py is a symbolic link to the reference's causal.py; the other modules are real."""
MODULE = "causal"
LINKS = {"attention_lab/causal.py": "@KIT@/solutions/attention_lab/causal.py"}
LOSES = ["s3.*"]
MENTIONS = "attention_lab/causal.py is a symbolic link, which is left out"
