"""What the child's own code can do beside the child's loop, short of taking the loop over: write result
files in its output folder (its working folder, where the request being answered is the one after the last
result there) and answer on its own end of the answer FIFO (the one FIFO it holds open for writing). It
cannot give the token each request carries, which only the loop that read the request holds: the grader
takes no such answer, and reads no such file."""

import os as _os
import stat as _stat


def _answers(numbers):
    """Answer ``numbers`` on the child's answer FIFO, as the child would."""
    for fd in _os.listdir("/proc/self/fd"):
        try:
            flags = int(open(f"/proc/self/fdinfo/{fd}").read().split("flags:")[1].split()[0], 8)
            if _stat.S_ISFIFO(_os.fstat(int(fd)).st_mode) and flags & 3 == 1:
                _os.write(int(fd), "".join(f"{n}\n" for n in numbers).encode())
        except (OSError, ValueError, IndexError):
            continue


def _asked():
    """The number of the request being answered now: the one after the last result in the working folder."""
    return 1 + max([int(f.split(".")[0]) for f in _os.listdir(".") if f.endswith(".pt") and f.split(".")[0].isdigit()],
                   default=0)
