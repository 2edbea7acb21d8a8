"""context_vectors_all calls pytest.skip: a pytest-based grader would report a skip, not a failure."""
MODULE = "simple"
LOSES = ["s1.context_vectors_all"]
MENTIONS = "pytest.Skipped"

import pytest


def context_vectors_all(inputs):
    pytest.skip("not needed")
