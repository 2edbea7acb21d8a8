"""softmax_naive as a tidy student writes it: debug output sent to os.devnull, a log line naming the
user (getpass.getuser()), a time stamp and a scratch file in the temporary folder. Honest, and it
must keep full marks inside the child's world (it once read "tried to write outside its sandbox
(/dev/null)", and getuser() raised for a grading user with no /etc/passwd entry)."""
MODULE = "simple"

import getpass
import os
import tempfile
import time


def softmax_naive(scores):
    with open(os.devnull, "w") as quiet:
        print(f"{getpass.getuser()} at {time.strftime('%H:%M', time.localtime())}", file=quiet)
    with tempfile.NamedTemporaryFile("w") as scratch:
        scratch.write(str(scores.tolist()))
    return torch.exp(scores) / torch.exp(scores).sum(dim=-1, keepdim=True)
