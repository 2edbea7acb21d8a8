"""The mutation run (tools/mutate.py): its mutants are the code a student writes, changed once, and
grading them counts what the checks kill; stage 1's one survivor is the equivalent one docs/checks.md
names (``dim=1`` for ``dim=-1`` on a 2-D matrix)."""
import ast
import json

from autograder.common.markers import solved
from tools.mutate import main, mutants, solution_lines
from tools.zoo import SOLUTIONS


def test_a_mutant_changes_one_place_inside_a_solution_region_and_still_compiles():
    source = (SOLUTIONS / "causal.py").read_text()
    inside = solution_lines(source)
    found = mutants("causal")
    assert len(found) > 50 and len({m.code for m in found}) == len(found)
    reference = ast.dump(ast.parse(solved(source)))
    for m in found:
        assert m.line in inside, m.change
        assert ast.dump(ast.parse(m.code)) != reference, m.change
        assert ast.get_docstring(ast.parse(m.code)) == ast.get_docstring(ast.parse(source))  # the docstring untouched
        assert "raise ValueError" not in m.change  # what an error says is the student's own wording


def test_stage_1_loses_every_mutant_but_the_equivalent_one(tmp_path, capsys):
    assert main(["--module", "simple", "--out", str(tmp_path), "--jobs", "2"]) == 0
    out = capsys.readouterr().out
    report = json.loads((tmp_path / "mutants.json").read_text())
    survivors = [r for r in report if not r["killed"]]
    assert len(report) >= 25 and len(survivors) == 1, out
    assert "torch.softmax(inputs @ inputs.T, dim=(1))" in survivors[0]["change"]
    assert f"{len(report) - 1} killed" in out and "survivor simple.py:" in out
