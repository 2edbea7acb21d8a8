"""What every zone may import, below all of them: how much a submission may hold (``limits``), how to
read a file someone else controls (``regular_files``: intake reads a student's, the grading process its
child's), nbgrader's markers in ``solutions/`` (``markers``: the build, the course, the release guard
and the course configuration read them), and TOML on every Python the kit runs on (``toml``: the course
configuration, and the dependencies pyproject.toml lists for the Gradescope zip)."""
