"""The nbgrader course generated from ``solutions/``: the course itself, what its grade cells
call, and the guard that keeps solutions out of a release."""
