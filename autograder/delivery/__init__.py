"""Where results go: the terminal table and results files (``report``), Gradescope, GitHub
Classroom, the nbgrader course (``nbgrader/``) and a whole class (``classrun/``)."""
