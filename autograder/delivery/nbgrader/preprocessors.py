"""What the kit adds to nbgrader's own autograde, as preprocessors nbgrader runs.

``TrustedOutputs`` takes the place of nbgrader's ``Execute`` when ``attention-lab nbgrader import``
autogrades: no kernel runs the student's notebook. Each grade cell gets the output its check's
trusted verdict calls for (graded in the isolated runner, kept in grade-all's record of the
student): nothing for a pass, an error with the check's feedback for a fail. nbgrader's own
``SaveAutoGrades`` then scores the cell from that output exactly as it scores an executed one, and
``generate_feedback`` shows the feedback where students read it.

``InertText`` renders each markdown cell to HTML as Jupyter would, and keeps of it only what nh3 (a
well-kept HTML sanitiser) lets through: no ``<script>``, no ``onerror=``, no ``javascript:`` link, in
the feedback a student opens or in formgrader, where the instructor reads the same notebook. Raw cells
get the same. Without it, nbconvert's feedback page runs whatever HTML a student typed into markdown.

``OverwriteCellsQuietly`` is nbgrader's ``OverwriteCells`` less one warning: a hidden grade cell's
released copy lacks its hidden part, so its checksum always differs from the source's, and nbgrader
warns "Attribute 'checksum' for cell ... has changed!" for every such cell of every student. It
warns when the cell differs from what was released, that is when a student changed it.
"""
from __future__ import annotations

import json
import os
from pathlib import Path

from nbformat.v4 import new_output
from nbgrader import utils
from nbgrader.api import MissingEntry
from nbgrader.preprocessors import NbGraderPreprocessor, OverwriteCells

from ...common.markers import strip_solutions
from ...public.pictures import Picture
from ..report import wrapped
from .pipelines import RECORDS, runs_public_checks

NOT_RUN = wrapped("Not run here: this notebook's grades were imported from attention-lab's isolated grader, which "
                  "ran the graded checks below in a sandbox. Run this cell yourself to see the public checks.") + "\n"


def check_id(grade_id: str) -> str:
    """The check a grade cell stands for: the course names cell ``s3-causal-no_leak`` after check
    ``s3.causal.no_leak`` (nbgrader's ids take no dots)."""
    return grade_id.replace("-", ".", 2)


class TrustedOutputs(NbGraderPreprocessor):
    def preprocess(self, nb, resources):
        student = resources["nbgrader"]["student"]
        path = Path(os.environ[RECORDS]) / f"{student}.json"
        if not path.is_file():  # the grader failed on this student: no grade is better than a false zero
            raise RuntimeError(f"attention-lab has no grades of {student} (the grader failed on this submission, "
                               "not the student); run `attention-lab nbgrader import` again")
        record = json.loads(path.read_text())
        self.tests = {t["number"]: t for t in record.get("tests", [])}
        self.whole = record.get("output", "")  # why a submission that could not be graded got nothing
        self.notes = record.get("extra_data", {}).get("notes", [])  # e.g. a module file left aside
        return super().preprocess(nb, resources)

    def preprocess_cell(self, cell, resources, index):
        if cell.cell_type != "code":
            return cell, resources
        grade_id = cell.metadata.get("nbgrader", {}).get("grade_id", "")
        if runs_public_checks(grade_id):  # worth 0 points, and autograde does not run them either
            cell.outputs = [new_output("stream", name="stdout", text=NOT_RUN)]
        elif utils.is_solution(cell):
            about = [n for n in self.notes if n.startswith(f"attention_lab/{grade_id.removesuffix('-code')}.py ")]
            cell.outputs = [new_output("stream", name="stdout", text=wrapped("\n".join(about)) + "\n")] if about else []
        elif utils.is_grade(cell):
            cell.outputs = self._verdict(check_id(grade_id))
        return cell, resources

    def _verdict(self, check):
        test = self.tests.get(check) or self.tests.get(check.split(".")[0])  # a stage not graded at all
        if test is None:
            return [_error("NotGraded", f"this check was not graded: {self.whole or 'no record of it'}")]
        if test.get("status") == "passed":
            measured = test["output"].partition("\n")[2]  # what a passing check measured, such as a speed
            said = f"passed ({test['score']} of {test['max_score']})" + (f"\n{measured}" if measured else "")
            return [new_output("stream", name="stdout", text=wrapped(said) + "\n")]
        # shown as the kernel shows a Picture: an <img> with alt text, which nbconvert's page of SVG alone lacks
        shown = [new_output("display_data", data=Picture(p["svg"], test["name"], alt=p.get("alt", ""))
                            ._repr_mimebundle_()) for p in test.get("extra_data", {}).get("pictures", [])]
        return shown + [_error("AssertionError",
                               wrapped(f"{test['name'].partition(': ')[2] or test['name']}: {test['output']}"))]


def _error(name, text):
    return new_output("error", ename=name, evalue=text, traceback=[f"{name}: {text}"])


class InertText(NbGraderPreprocessor):
    def preprocess_cell(self, cell, resources, index):
        import nh3
        from nbconvert.filters.markdown_mistune import markdown2html_mistune

        if cell.cell_type == "markdown":
            cell.source = nh3.clean(markdown2html_mistune(cell.source), url_schemes=SAFE_SCHEMES)
        elif cell.cell_type == "raw":
            cell.source = nh3.clean(cell.source, url_schemes=SAFE_SCHEMES)
        return cell, resources


SAFE_SCHEMES = {"http", "https", "mailto", "attachment"}  # a cell's own attachments keep showing


class OverwriteCellsQuietly(OverwriteCells):
    def preprocess_cell(self, cell, resources, cell_index):
        self._as_released = False
        grade_id = cell.metadata.get("nbgrader", {}).get("grade_id")
        if grade_id is not None:
            try:
                source = self.gradebook.find_source_cell(grade_id, self.notebook_id, self.assignment_id).source
                self._as_released = cell.source.rstrip() == strip_solutions(source).rstrip()
            except MissingEntry:
                pass
        return super().preprocess_cell(cell, resources, cell_index)

    def report_change(self, name, attr, old, new):
        if attr == "checksum" and self._as_released:
            return  # the release removed the hidden part: that is no change by the student
        super().report_change(name, attr, old, new)
