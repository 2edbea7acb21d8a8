"""How many of the reference's first-order mutants the hidden checks kill:
``python -m tools.mutate [--module M ...] [--jobs J] [--out DIR] [--list]``.

A mutant is the reference (``solutions/attention_lab/``) with one small change in code a student
writes (inside a solution region): an arithmetic or comparison operator swapped, a number moved by
one, a boolean flipped, a sign or a ``not`` dropped, ``and``/``or`` swapped, a statement deleted.
Every mutant is a student of one class, graded by ``grade-all`` on the stages that run its module
(its own and those that build on it). A mutant is *killed* when it loses a point, and *survives*
when it keeps full marks; a survivor is either a mistake the checks miss or an *equivalent* mutant,
one that behaves as the reference does wherever the contract reaches. docs/checks.md keeps the
figures and says why each survivor is equivalent.

It prints the counts per module and every survivor (module, line, the change), and writes
``<out>/mutants.json`` with every mutant and its score. It takes an hour or so for the whole kit
on two cores; ``--module`` picks modules, ``--list`` only lists the mutants.
"""
from __future__ import annotations

import argparse
import ast
import contextlib
import csv
import json
import sys
import tempfile
import time
from dataclasses import asdict, dataclass
from pathlib import Path

from autograder.curriculum import STAGE_OF, stages_using
from autograder.grading.config import CourseConfig
from autograder.common.markers import BEGIN, END, solved
from tools.zoo import SOLUTIONS

SWAPS = {  # operator -> what it becomes: the slip a student makes next to the right one
    ast.Add: ast.Sub, ast.Sub: ast.Add, ast.Mult: ast.Div, ast.Div: ast.Mult, ast.Pow: ast.Mult,
    ast.FloorDiv: ast.Div, ast.Mod: ast.FloorDiv, ast.MatMult: ast.Mult,
    ast.Lt: ast.LtE, ast.LtE: ast.Lt, ast.Gt: ast.GtE, ast.GtE: ast.Gt, ast.Eq: ast.NotEq, ast.NotEq: ast.Eq,
    ast.Is: ast.IsNot, ast.IsNot: ast.Is, ast.In: ast.NotIn, ast.NotIn: ast.In, ast.And: ast.Or, ast.Or: ast.And,
}


@dataclass(frozen=True)
class Mutant:
    module: str
    number: int  # its place among the module's mutants
    line: int
    change: str  # "operator: <the line> -> <the line mutated>", as the student would read it
    code: str  # the whole module, mutated, as a student who solved it hands it in

    @property
    def name(self):
        return f"{self.module}-{self.number:04d}"


def solution_lines(source: str) -> set[int]:
    """The line numbers inside solution regions: what a student writes."""
    inside, lines = False, set()
    for number, line in enumerate(source.splitlines(), 1):
        if line.strip() == BEGIN:
            inside = True
        elif line.strip() == END:
            inside = False
        elif inside:
            lines.add(number)
    return lines


def _variants(node):
    """(mutated copy of ``node``, its kind) for each first-order change of the node itself."""
    def copy_with(**changes):
        new = ast.parse(ast.unparse(node), mode="eval").body
        for key, value in changes.items():
            setattr(new, key, value)
        return new

    if isinstance(node, ast.BinOp) and type(node.op) in SWAPS:
        yield copy_with(op=SWAPS[type(node.op)]()), "operator"
    elif isinstance(node, ast.BoolOp):
        yield copy_with(op=SWAPS[type(node.op)]()), "operator"
    elif isinstance(node, ast.Compare) and len(node.ops) == 1 and type(node.ops[0]) in SWAPS:
        yield copy_with(ops=[SWAPS[type(node.ops[0])]()]), "comparison"
    elif isinstance(node, ast.Constant) and type(node.value) is bool:
        yield ast.Constant(not node.value), "boolean"
    elif isinstance(node, ast.Constant) and type(node.value) in (int, float):
        for moved in (node.value + 1, node.value - 1):
            yield ast.Constant(moved), "number"
    elif isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.Not)):
        yield node.operand, "sign" if isinstance(node.op, ast.USub) else "not"


def _inert(tree):
    """Nodes whose code a mutant must leave alone: docstrings, f-strings (messages) and the arguments
    of ``raise`` (what an error says is the student's own wording)."""
    skip = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.JoinedStr, ast.Raise)):
            skip.update(id(n) for n in ast.walk(node))
        if isinstance(node, (ast.FunctionDef, ast.ClassDef, ast.Module)) and ast.get_docstring(node) is not None:
            skip.update(id(n) for n in ast.walk(node.body[0]))
    return skip


def mutants(module: str) -> list[Mutant]:
    """Every first-order mutant of ``module``'s solution regions that still compiles and differs."""
    source = (SOLUTIONS / f"{module}.py").read_text(encoding="utf-8")
    lines, tree = solution_lines(source), ast.parse(source)
    text_lines = source.splitlines(keepends=True)
    offsets = [0]
    for line in text_lines:
        offsets.append(offsets[-1] + len(line))

    def at(lineno, col):  # col_offset is in UTF-8 bytes
        return offsets[lineno - 1] + len(text_lines[lineno - 1].encode()[:col].decode())

    inert, found, seen = _inert(tree), [], set()
    for node in ast.walk(tree):
        if id(node) in inert or not hasattr(node, "lineno") or node.lineno not in lines:
            continue
        start, end = at(node.lineno, node.col_offset), at(node.end_lineno, node.end_col_offset)
        replacements = []
        if isinstance(node, ast.expr):
            replacements = [(f"({ast.unparse(new)})", kind) for new, kind in _variants(node)]
        elif isinstance(node, (ast.Assign, ast.AugAssign, ast.Expr)) and node.end_lineno in lines:
            replacements = [("pass", "deleted")]  # the statement left out
        for text, kind in replacements:
            code = source[:start] + text + source[end:]
            try:
                compile(code, module, "exec")
            except SyntaxError:
                continue
            if ast.dump(ast.parse(code)) == ast.dump(tree) or code in seen:
                continue
            seen.add(code)
            # the whole line, before and after: which 0 of a line became 1 is plain only in its line
            first, last = offsets[node.lineno - 1], offsets[node.end_lineno]
            before = " ".join(source[first:last].split())
            after = " ".join((source[first:start] + text + source[end:last]).split())
            change = f"{kind}: {before[:110]}  ->  {after[:110]}"
            found.append((node.lineno, change, solved(code)))
    return [Mutant(module, i, *m) for i, m in enumerate(sorted(found))]


def grade_mutants(found: list[Mutant], jobs: int, out: Path) -> dict:
    """Grade each module's mutants with grade-all, a class per module; returns mutant name -> its row."""
    from autograder.delivery.classrun.grade_all import grade_all

    rows = {}
    reference = {p.name: p.read_text(encoding="utf-8") for p in SOLUTIONS.glob("*.py")}
    for module in sorted({m.module for m in found}):
        mine = [m for m in found if m.module == module]
        with tempfile.TemporaryDirectory(prefix=f"mutants-{module}-") as scratch:
            folder = Path(scratch) / "class"
            for m in mine:
                package = folder / m.name / "attention_lab"
                package.mkdir(parents=True)
                for name, text in reference.items():
                    (package / name).write_text(solved(text) if name != f"{module}.py" else m.code, encoding="utf-8")
            stages = sorted(stages_using(module))
            started = time.monotonic()
            print(f"{module}: {len(mine)} mutants, graded on stage(s) {', '.join(map(str, stages))}",
                  file=sys.stderr, flush=True)
            with contextlib.redirect_stdout(sys.stderr):  # grade-all's class summary: not this tool's report
                grade_all(folder, out / f"{module}.csv", json_dir=out / f"{module}-results", jobs=jobs, stages=stages,
                          config=CourseConfig(), log=lambda text: None)
            with open(out / f"{module}.csv", newline="", encoding="utf-8") as f:
                for row in csv.DictReader(f):
                    rows[row["student"]] = row
            print(f"{module}: graded in {time.monotonic() - started:.0f} s", file=sys.stderr, flush=True)
    return rows


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m tools.mutate", description=__doc__.split("\n\n")[0])
    parser.add_argument("--module", action="append", choices=sorted(STAGE_OF), help="only this module (repeatable)")
    parser.add_argument("--jobs", "-j", type=int, default=None, help="students graded at once")
    parser.add_argument("--out", type=Path, default=None, help="a folder for the CSVs and mutants.json "
                        "(default: a new temporary folder)")
    parser.add_argument("--list", action="store_true", help="list the mutants, grade nothing")
    args = parser.parse_args(argv)
    found = [m for module in (args.module or sorted(STAGE_OF)) for m in mutants(module)]
    if args.list:
        for m in found:
            print(f"{m.module}.py:{m.line}: {m.change}")
        print(f"{len(found)} mutants")
        return 0
    out = args.out or Path(tempfile.mkdtemp(prefix="mutants-"))
    out.mkdir(parents=True, exist_ok=True)
    rows = grade_mutants(found, args.jobs, out)
    report, survivors = [], []
    for m in found:
        row = rows.get(m.name, {})
        score, top = row.get("total", ""), row.get("out_of", "")
        killed = bool(row) and score != top
        report.append({**{k: v for k, v in asdict(m).items() if k != "code"}, "name": m.name, "score": score,
                       "max_score": top, "killed": killed})
        if not killed:
            survivors.append(m)
    (out / "mutants.json").write_text(json.dumps(report, indent=1), encoding="utf-8")
    for module in sorted({m.module for m in found}):
        mine = [r for r in report if r["module"] == module]
        print(f"{module + '.py':<20} {len(mine):>4} mutants  {sum(r['killed'] for r in mine):>4} killed  "
              f"{sum(not r['killed'] for r in mine):>3} survived")
    print(f"{'all':<20} {len(report):>4} mutants  {sum(r['killed'] for r in report):>4} killed  "
          f"{len(survivors):>3} survived")
    for m in survivors:
        print(f"survivor {m.module}.py:{m.line}: {m.change}")
    print(f"every mutant and its score: {out / 'mutants.json'}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
