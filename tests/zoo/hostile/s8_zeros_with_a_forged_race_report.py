"""FastMultiHeadAttention returns zeros on the timed size (at once: the fastest layer there is), and at
each timed call writes a race report of its own (its time a fortieth of the kit's, its outputs equal)
as the result of every request the grader could make, answering them: a race judged in the child, on
its word, once gave it the points. The race is run from the grading process: the report is the
grader's, and the outputs it compares are the kit's own child's and the student's."""
MODULE = "modern"
STAGES = [8]
TIMEOUT = 10
LOSES = ["s8.fast.speed"]
MENTIONS = ("speed counts only for correct outputs", "should be a plain torch.Tensor")
HELPERS = ["answers_for_itself"]

_REPORT = {"student_s": [0.001] * 9, "kit_s": [0.04] * 9, "max_diff": 0.0, "scale": 1.0, "races": 1}


def _forge():
    for n in range(1, 400):
        torch.save(_REPORT, f"{n}.pt")  # the child's working folder is its output folder
    _answers(range(1, 400))


class FastMultiHeadAttention(FastMultiHeadAttention):
    def forward(self, x):
        if x.shape[1] != 2048:
            return super().forward(x)
        _forge()
        return torch.zeros_like(x)
