"""The submission holds nothing but a symbolic link: attention_lab -> the kit's own reference
(git keeps links, so a GitHub Classroom repository or a Gradescope upload can carry one)."""
MODULE = "causal"
LINKS = {"attention_lab": "@KIT@/solutions/attention_lab"}
LOSES = ["s3.*"]
MENTIONS = "symbolic link"
REFUSED = "attention_lab/ is a symbolic link"
