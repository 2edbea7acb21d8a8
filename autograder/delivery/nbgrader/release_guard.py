"""An nbgrader preprocessor for ``nbgrader generate_assignment``, named in the course's config.

nbgrader strips solutions from notebooks only; every other file of the source folder reaches
the release as it is. This guard fails the release (nbgrader then removes what it had written)
when such a file holds a solution or hidden-test region, which is what running a source
notebook leaves behind: its module cell writes the full solution into ``attention_lab/``.
"""
from pathlib import Path

from nbgrader.preprocessors import NbGraderPreprocessor

from ...markers import BEGIN, HIDDEN_BEGIN


class ReleaseGuard(NbGraderPreprocessor):
    def preprocess(self, nb, resources):
        folder = Path(resources["metadata"]["path"])
        for path in sorted(folder.rglob("*")):
            if path.suffix == ".ipynb" or not path.is_file() or ".ipynb_checkpoints" in path.parts:
                continue
            text = path.read_text(errors="replace")
            for marker in (BEGIN, HIDDEN_BEGIN):
                if marker in text:
                    line = text[: text.index(marker)].count("\n") + 1
                    raise ValueError(
                        f"{path.relative_to(folder)} line {line} holds '{marker}' and would reach students "
                        "as it is (running a source notebook writes its solution there). Nothing was "
                        "released; restore the stubs with `attention-lab nbgrader init COURSE_DIR --force`.")
        return nb, resources
