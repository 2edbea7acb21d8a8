"""GroupedQueryAttention has an extra parameter, and it is named ``error``: the report of its parameters
by name then holds an ``"error"`` key, which the grader once took for an error record of its own and
failed on (a grader error, not the student's). It is the student's data: the check says which
parameter the contract does not have; and stage 9's layer built on it, that no gradient reaches it."""
MODULE = "modern"
LOSES = ["s8.gqa.parameters", "s9.gradients"]
ONLY = True
MENTIONS = "besides the four projections: error"


class GroupedQueryAttention(GroupedQueryAttention):
    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.error = nn.Parameter(torch.zeros(1))
