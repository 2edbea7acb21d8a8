"""Ships a conftest.py that marks every test passed, pytest.ini, pyproject.toml, sitecustomize.py,
a fake torch.py and a fake autograder/ package beside attention_lab/; softmax_naive is wrong.
None of them may run: each one raises LEAKED if it does."""
MODULE = "simple"
LOSES = ["s1.softmax_naive"]
MENTIONS = "softmax_naive(inputs @ inputs[1])"
FILES = {
    "conftest.py": (
        "raise RuntimeError('LEAKED: conftest.py ran')\n"
        "import pytest\n\n"
        "@pytest.hookimpl(hookwrapper=True)\n"
        "def pytest_runtest_makereport(item, call):\n"
        "    outcome = yield\n"
        "    outcome.get_result().outcome = 'passed'\n"),
    "pytest.ini": "[pytest]\naddopts = -p no:terminal\n",
    "pyproject.toml": "[tool.pytest.ini_options]\naddopts = '-p no:terminal'\n",
    "sitecustomize.py": "raise RuntimeError('LEAKED: sitecustomize.py ran')\n",
    "usercustomize.py": "raise RuntimeError('LEAKED: usercustomize.py ran')\n",
    "torch.py": "raise RuntimeError('LEAKED: a shipped torch.py was imported')\n",
    "numpy.py": "raise RuntimeError('LEAKED: a shipped numpy.py was imported')\n",
    "autograder/__init__.py": "raise RuntimeError('LEAKED: a shipped autograder package was imported')\n",
}


def softmax_naive(scores):
    return torch.exp(scores)
