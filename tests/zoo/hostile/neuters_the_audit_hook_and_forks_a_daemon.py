"""attention_scores_loop empties the audit hook's table of refused events (through the traceback of a
refusal it makes quietly), then forks, by os.fork and by libc's fork through ctypes, a daemon that makes
itself undumpable (its environment unreadable to the grader, which once found stragglers by it) and
leaves for a session of its own: a process that would outlive its grading and run beside the next
students. The kernel's filter refuses a child every process: threads are all it may start."""
MODULE = "simple"
LOSES = ["s1.scores_loop"]
MENTIONS = "no process could be started"
HELPERS = ["neuters_the_audit_hook"]

import ctypes
import os
import time


def _daemon():
    libc = ctypes.CDLL(None)
    libc.prctl(4, 0, 0, 0, 0)  # PR_SET_DUMPABLE 0
    os.setsid()
    time.sleep(60)
    os._exit(0)


def attention_scores_loop(inputs, query):
    _neuter_the_audit_hook()
    refused = []
    for fork in (os.fork, ctypes.CDLL(None, use_errno=True).fork):
        try:
            pid = fork()
        except OSError as exc:
            refused.append(exc.strerror)
            continue
        if pid == 0:
            _daemon()
        if pid > 0:
            raise RuntimeError(f"LEAKED: a daemon runs, pid {pid}")
        refused.append(os.strerror(ctypes.get_errno()))
    raise RuntimeError(f"no process could be started: {refused}")
