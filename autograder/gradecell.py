"""What the grade cells of courses made by ``attention-lab nbgrader init`` import
(``from autograder.gradecell import check``): kept at this path so that those notebooks keep
working. The code is ``autograder.delivery.nbgrader.gradecell``."""
from .delivery.nbgrader.gradecell import check  # noqa: F401
