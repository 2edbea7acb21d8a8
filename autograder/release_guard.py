"""What the ``nbgrader_config.py`` of courses made by ``attention-lab nbgrader init`` names
(``autograder.release_guard.refuse_solutions``, and ``ReleaseGuard`` in courses made by earlier
kits): kept at this path so that those courses keep working. The code is
``autograder.delivery.nbgrader.release_guard``."""
from .delivery.nbgrader.release_guard import ReleaseGuard, refuse_solutions  # noqa: F401
