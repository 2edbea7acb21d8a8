"""``attention-lab new-stage NUMBER MODULE``: a new stage's own files, ready to build and grade, and its row.

It writes what docs/instructors/new-stage.md describes, for a stage whose student writes one function: the
solution (with its solution region), the probe and its check (golden data, dtype and shape judged), the
student's self-checks, a wrong and a correct zoo entry, and the curriculum row. The function is a
placeholder that works (scores scaled by the key width), so that the stage grades and tests at once
(``attention-lab build``, then ``python -m tools.stage_tests NUMBER``); the instructor then writes their
own in its place, file by file. Nothing is written where anything is in the way: a number or a module the
curriculum has, or a file that exists.
"""
from __future__ import annotations

import keyword
import textwrap
from pathlib import Path

from ..curriculum import STAGE_OF, STAGES
from ..errors import UsageError
from ..paths import KIT_ROOT

CURRICULUM = "autograder/curriculum.py"
END_OF_STAGES = ")\n\nSTAGE_OF"  # where the rows of STAGES close: the new row goes before it

SOLUTION = '''"""Stage {number}: {title}.

{Title}. (Written by ``attention-lab new-stage``: this module's docstring is the stage's introduction in its
notebook. Replace the example function below with the stage's own.)
"""
import torch


def scaled_scores(queries, keys):
    """The attention scores of every query against every key, scaled by ``1 / sqrt(d)``.

    ``queries``: (..., n_queries, d); ``keys``: (..., n_keys, d). Returns (..., n_queries, n_keys), in the
    inputs' dtype.
    """
    # TODO: the dot product of each query with each key (the last dims), divided by sqrt(d).
    ### BEGIN SOLUTION
    return queries @ keys.transpose(-2, -1) / queries.shape[-1] ** 0.5
    ### END SOLUTION
'''

PROBES = '''"""Stage {number} probes: {title}."""
from .common import Probes, plain, randn, shape_reports

PROBES = Probes()

QUERIES, KEYS = randn(2, 3, 4, seed=1101), randn(2, 5, 4, seed=1102)  # a batch of 2: 3 queries, 5 keys, d = 4
# The shape contract of a function of two tensors: each case its inputs' shapes, by name (the judge reads the same)
SHAPES = [{{"name": "3 queries, 4 keys, no batch", "inputs": {{"queries": (3, 8), "keys": (4, 8)}}, "dtypes": True}},
          {{"name": "a batch of 2, 2 heads", "inputs": {{"queries": (2, 2, 5, 8), "keys": (2, 2, 7, 8)}}}},
          {{"name": "one query", "inputs": {{"queries": (1, 1, 8), "keys": (1, 6, 8)}}}}]


def expected_shape(case):
    queries, keys = case["inputs"]["queries"], case["inputs"]["keys"]
    return [*queries[:-1], keys[-2]]


@PROBES.add("s{number}.scores.shapes")
def scores_shapes(lab, device):
    return {{"reports": shape_reports(lab, lambda case: lab.{module}.scaled_scores, SHAPES, device)}}


@PROBES.add("s{number}.scores", golden=True)
def scores(lab, device):
    def run(dtype):
        out = lab.{module}.scaled_scores(QUERIES.to(device, dtype), KEYS.to(device, dtype))
        return plain(out, "scaled_scores(queries, keys)")

    return {{"float32": lab.attempt(run, QUERIES.dtype), "float64": lab.attempt(run, QUERIES.double().dtype)}}
'''

CHECKS = '''"""Stage {number} judges: {title}."""
from ...probes.stage{number} import KEYS, QUERIES, SHAPES, expected_shape
from ..families import shape_contract
from ..judging import expect_close, expect_form, get, name_the_mistake
from ..registry import NUMERIC, Checks

CHECKS = Checks({number})

shape_contract(CHECKS, "s{number}.scores", 1, SHAPES, expected_shape,
               "scaled_scores keeps its inputs' batch dims, dtype and device, and leaves its inputs as they were")


@CHECKS.add("s{number}.scores", points=2, probe="s{number}.scores", devices=NUMERIC,
            title="scaled_scores gives every query's scores against every key, scaled by 1/sqrt(d)")
def scores(obs, ctx):
    for dtype in ("float32", "float64"):
        what = (f"scaled_scores(queries, keys) for {{dtype}} inputs of shapes {{tuple(QUERIES.shape)}} and "
                f"{{tuple(KEYS.shape)}}")
        got, expected = get(obs, dtype), ctx.golden[dtype]
        expect_form(got, what, expected.shape, dtype)  # (batch, queries, keys), in the inputs' dtype
        name_the_mistake(got, expected, [  # the usual mistakes, each with what its code gives on the same inputs
            (f"these are the dot products themselves; the scores divide them by sqrt(d) = "
             f"{{QUERIES.shape[-1] ** 0.5:g}}", QUERIES.double() @ KEYS.double().transpose(-2, -1))], what)
        expect_close(got, expected, what)
'''

SELF_CHECKS = '''"""Stage {number} self-checks: {title} (attention_lab/{module}.py)."""
import pytest
import torch

from lab_checks import expect, run, student

pytestmark = pytest.mark.stage{number}


def test_one_query_against_two_keys():
    scores = run(student("{module}").scaled_scores, torch.tensor([[1.0, 2.0, 2.0, 4.0]]),
                 torch.tensor([[1.0, 0.0, 0.0, 0.0], [0.0, 0.5, 0.5, 0.0]]))
    expect(torch.allclose(scores, torch.tensor([[0.5, 1.0]])),
           f"scaled_scores of (1, 2, 2, 4) against (1, 0, 0, 0) and (0, .5, .5, 0) should be [[0.5, 1.0]] "
           f"(dot products 1 and 2, divided by sqrt(4)), got {{scores.tolist()}}")
'''

WRONG = '''"""scaled_scores forgets the scaling: the raw dot products."""
MODULE = "{module}"
LOSES = ["s{number}.scores"]
ONLY = True
MENTIONS = "the scores divide them by sqrt(d)"


def scaled_scores(queries, keys):
    return queries @ keys.transpose(-2, -1)
'''

CORRECT = '''"""scaled_scores with einsum, the queries scaled before the product."""
MODULE = "{module}"


def scaled_scores(queries, keys):
    return torch.einsum("...qd,...kd->...qk", queries * queries.shape[-1] ** -0.5, keys)
'''

ROW = '''    Stage({number}, "{module}", {title},
          {teaches}),
'''
WIDTH = 100  # of each piece of a long text in the row: the kit's lines stay under ruff's 120


def literal(text: str) -> str:
    """``text`` as a Python string literal in the row: pieces of at most ``WIDTH`` characters, one per line,
    that Python joins (a long title or description would otherwise make one line too long for the linter)."""
    pieces = textwrap.wrap(text, WIDTH, drop_whitespace=False) or [""]
    return "\n          ".join(f'"{piece}"' for piece in pieces)


def files(number: int, module: str) -> dict[str, str]:
    """The template of each file of stage ``number``, by its path in the kit."""
    return {f"solutions/attention_lab/{module}.py": SOLUTION, f"autograder/probes/stage{number}.py": PROBES,
            f"autograder/grading/checks/stage{number}.py": CHECKS,
            f"assignments/tests/test_stage{number}_{module}.py": SELF_CHECKS,
            f"tests/zoo/wrong/s{number}_scores_unscaled.py": WRONG,
            f"tests/zoo/correct/s{number}_scores_einsum.py": CORRECT}


def new_stage(number: int, module: str, title: str = "", teaches: str = "", root: Path = KIT_ROOT) -> list[Path]:
    """Write stage ``number``'s files into the kit at ``root`` and add its curriculum row; returns what it wrote.
    Raises UsageError, having written nothing, where anything is in the way."""
    title = title or f"stage {number}"
    teaches = teaches or "what this stage teaches (the curriculum row says it)"
    if number in STAGES or number < 1:
        free = max(STAGES) + 1
        raise UsageError(f"stage {number} is {'taken: ' + STAGES[number].title if number in STAGES else 'not a stage'}"
                         f"; the next free number is {free}")
    if not module.isidentifier() or keyword.iskeyword(module) or not module.islower():
        raise UsageError(f"{module!r} is not a module name: lowercase letters, digits and _ (alibi, linear_attention)")
    if module in STAGE_OF:
        raise UsageError(f"module {module!r} is stage {STAGE_OF[module]}'s already; give the new stage its own")
    if '"' in title + teaches or "\\" in title + teaches:
        raise UsageError("the title and what the stage teaches are plain words, without quotes or backslashes")
    planned = {root / path: text.format(number=number, module=module, title=title, Title=title[:1].upper() + title[1:])
               for path, text in files(number, module).items()}
    there = [str(p.relative_to(root)) for p in planned if p.exists()]
    if there:
        raise UsageError(f"{', '.join(there)} exist(s) already: nothing was written")
    add_row = row_adder(root)  # before any file is written: a curriculum it cannot add to stops it
    for path, text in planned.items():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    add_row(ROW.format(number=number, module=module, title=literal(title), teaches=literal(teaches)))
    return [*planned, root / CURRICULUM]


def row_adder(root: Path = KIT_ROOT):
    """A function that adds a row at the end of ``STAGES`` in the kit at ``root`` (the guide's one edit outside a
    stage's files); UsageError, now, where the end of ``STAGES`` is not found once."""
    curriculum = (root / CURRICULUM).read_text()
    if curriculum.count(END_OF_STAGES) != 1:
        raise UsageError(f"{CURRICULUM}: the end of STAGES is not where the new row goes; add the row by hand")
    return lambda row: (root / CURRICULUM).write_text(curriculum.replace(END_OF_STAGES, row + END_OF_STAGES))
