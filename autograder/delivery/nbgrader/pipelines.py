"""Which preprocessors nbgrader runs for the kit, and which cells of the course's notebooks run the
public checks, named once: the course (its notebooks, its ``nbgrader_config.py``) and ``attention-lab
nbgrader import`` both use them. Names only, so that reading them needs no nbgrader (``nbgrader init``
writes a course without it)."""

QUIET_OVERWRITE = "autograder.delivery.nbgrader.preprocessors.OverwriteCellsQuietly"
TRUSTED_OUTPUTS = "autograder.delivery.nbgrader.preprocessors.TrustedOutputs"
INERT_TEXT = "autograder.delivery.nbgrader.preprocessors.InertText"

# nbgrader's sanitize step, with OverwriteCells replaced by the kit's quiet one: a hidden grade cell's
# released copy lacks its hidden part, so nbgrader would warn that its checksum changed, for every
# such cell of every student; the quiet one warns only when a student changed the cell. Then the
# students' markdown and raw cells made inert (InertText): the autograded notebook is what the
# feedback pages and formgrader render, in the instructor's browser too.
SANITIZE = ["nbgrader.preprocessors.ClearOutput", "nbgrader.preprocessors.DeduplicateIds",
            "nbgrader.preprocessors.OverwriteKernelspec", QUIET_OVERWRITE, "nbgrader.preprocessors.CheckCellMetadata",
            INERT_TEXT]

# nbgrader's autograde step, with its kernel (Execute) replaced by the trusted verdicts: the
# student's notebook is never run.
AUTOGRADE = [TRUSTED_OUTPUTS, "nbgrader.preprocessors.IgnorePattern",
             "nbconvert.preprocessors.ClearMetadataPreprocessor", "nbgrader.preprocessors.LimitOutput",
             "nbgrader.preprocessors.SaveAutoGrades", "nbgrader.preprocessors.AssignLatePenalties",
             "nbgrader.preprocessors.CheckCellMetadata"]

RECORDS = "ATTENTION_LAB_RECORDS"  # where TrustedOutputs finds grade-all's records of the students imported

# A notebook's cells that run one public check each (0 points: public/selfchecks.py) are "public-<module>-<n>";
# a check's own grade cell is named after the check ("s3-causal-no_leak"), which starts with its stage, so the
# two never meet. Courses of earlier kits ran the public checks in one cell, "<module>-selfcheck".
PUBLIC_CELL = "public-{module}-{n}"


def runs_public_checks(grade_id: str) -> bool:
    return grade_id.startswith("public-") or grade_id.endswith("-selfcheck")
