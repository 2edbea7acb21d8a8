"""attention-lab's instructor toolkit, in zones of trust (``docs/architecture.md``):

- ``public``: torch and the standard library only, no expected value; partly copied to students;
- ``probes``: trusted code that runs in the child, beside the student's code; imports ``public``;
- ``sandbox``: runs untrusted code in a confined child and knows no check;
- ``intake``: what a submission is (folders, module files, notebooks, zips);
- ``grading``: the trusted process: the check registry, judges, golden data, verdicts;
- ``delivery``: reports, Gradescope, GitHub Classroom, nbgrader, a whole class;
- ``authoring``: the build of stubs, golden data and workflows from ``solutions/``.

``curriculum``, ``errors`` and ``paths`` are the few facts every zone shares. The contracts
between zones are checked by import-linter (``.importlinter``).
"""
