"""normalize_by_sum calls pytest.xfail: a pytest-based grader would count an expected failure."""
MODULE = "simple"
LOSES = ["s1.normalize_by_sum"]
MENTIONS = "pytest.XFailed"

import pytest


def normalize_by_sum(scores):
    pytest.xfail("known issue")
