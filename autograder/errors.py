"""The kit's own exceptions: whose fault it is decides how a command ends.

- ``SubmissionError``: the submission cannot be graded at all (missing, malformed, too large): a
  message for its author; ``attention-lab grade`` exits 2.
- ``GradingError``: the grader itself could not run (not the submission's fault): grading stops
  loudly; ``attention-lab grade`` exits 1.
- ``BuildError``: what is generated from ``solutions/`` cannot be built: a message for the author.
- ``UsageError``: a command was asked for something it cannot do (not a class of submissions, a
  locked folder): a message for the instructor.
"""
from __future__ import annotations


class SubmissionError(Exception):
    """The submission cannot be graded at all (missing or malformed). ``str()`` is the message for
    the one who grades (it may name their folders); ``student`` is what the student may read: no
    path of the grading machine, no advice meant for the instructor."""

    def __init__(self, message: str, student: str | None = None) -> None:
        super().__init__(message)
        self.student = student or message


class GradingError(Exception):
    """The grader itself could not run (not the submission's fault): grading must stop loudly."""


class BuildError(Exception):
    """What is generated from solutions/ cannot be built."""


class UsageError(Exception):
    """Nothing can be done as asked: a message for the instructor."""
