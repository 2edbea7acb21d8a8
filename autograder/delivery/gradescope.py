"""Gradescope: ``export`` writes the autograder zip, ``main`` grades one submission inside it.

Gradescope unpacks the zip into ``/autograder/source``, runs ``setup.sh`` once as root to build
the image, then runs ``run_autograder`` as root for every submission, which must leave
``/autograder/results/results.json``. Hence the layout:

- ``setup.sh`` and ``run_autograder`` at the top, where Gradescope looks for them;
- the kit as plain source under ``kit/``, run from there (``python -m autograder.delivery.gradescope``
  in ``kit/``) and never pip-installed: the copy in the zip is the one that grades, and the
  package the grader locks away from the student's code (chmod 0700) is that copy;
- only the runtime package ``autograder/`` (its code and data: ``paths.runtime_files``) and
  ``constraints.txt``: grading needs nothing more (benchmarks, the zoo and tests live outside
  it), and the students' code runs in the same container, so ``solutions/`` never goes in: only the
  reference of a stage the course gives (``kit/given/<module>.py``), which the students hold anyway;
- torch at the version ``constraints.txt`` pins, from PyTorch's CPU index: Gradescope has no GPU,
  and the default index's torch brings gigabytes of CUDA libraries; then every other dependency
  grading imports (pyproject.toml's, each pinned by ``constraints.txt``: ``pins.dependencies``) and
  the system's libseccomp, so that the image has every layer the kit has (a missing one is said in
  every results.json's ``output``, never silent);
- the stages to grade as data (``kit/gradescope.json``), so one kit serves any assignment;
- every way out leaves a valid results.json: a student whose upload cannot be graded reads what
  to upload, and a failure of the grader says so instead of blaming the student.
"""
from __future__ import annotations

import argparse
import html
import io
import json
import shlex
import stat
import sys
import traceback
import zipfile
from pathlib import Path

from ..paths import KIT_ROOT, runtime_files
from .report import wrapped, write_atomically, write_json

CONFIG = "gradescope.json"

SETUP = """#!/usr/bin/env bash
# Gradescope runs this once, as root, when it builds the autograder's image. AUTOGRADER_ROOT, as in
# run_autograder, builds the same environment in a folder laid out like /autograder.
set -euo pipefail
ROOT="${{AUTOGRADER_ROOT:-/autograder}}"
CONSTRAINTS="$ROOT/source/kit/constraints.txt"
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
# libseccomp2: the system library that pyseccomp binds for the syscall filter (docs/security.md).
apt-get install -y -qq python3 python3-pip python3-venv libseccomp2 > /dev/null
# The kit needs Python 3.10 or newer: Gradescope's Ubuntu 22.04 base image (or a later one) has it.
if ! python3 -c 'import sys; sys.exit(sys.version_info < (3, 10))'; then
    echo "attention-lab needs Python 3.10 or newer, and this image has $(python3 --version 2>&1):" \
         "choose Gradescope's Ubuntu 22.04 base image or a later one" >&2
    exit 1
fi
python3 -m venv "$ROOT/venv"
# CPU torch ({torch_pin}, as constraints.txt pins it): the default index's torch pulls gigabytes of CUDA wheels.
"$ROOT/venv/bin/pip" install --quiet --index-url {index} -c "$CONSTRAINTS" {torch}
# Everything else grading imports (pyproject.toml's dependencies), at the versions constraints.txt pins:
# without Landlock's or the syscall filter's bindings, every grading would lack that layer (docs/security.md).
"$ROOT/venv/bin/pip" install --quiet -c "$CONSTRAINTS" {rest}
"""

RUN = """#!/usr/bin/env bash
# Gradescope runs this, as root, for every submission. The kit grades from its own copy in
# source/kit; the two variables let the same script grade a folder laid out like /autograder.
set -euo pipefail
ROOT="${AUTOGRADER_ROOT:-/autograder}"
PYTHON="${ATTENTION_LAB_PYTHON:-$ROOT/venv/bin/python}"
cd "$ROOT/source/kit"
exec "$PYTHON" -m autograder.delivery.gradescope --root "$ROOT"
"""


GRADER_FAILED = ("The autograder failed while grading this submission. This is not your fault: please tell "
                 "the course staff (the autograder's log shows them what went wrong). The score of 0 here is "
                 "not a grade.")


# Gradescope shows a results.json's top-level output to staff and students alike, and has no output for
# the staff alone but the autograder's stdout, which nobody reads unless something looks wrong.
ISOLATION_NOTE = ("For the course staff, on the autograder's isolation: {}. attention-lab's docs/security.md says "
                  "what is then open.")

LEADERBOARD_STAGE = 8  # the stage whose speed check reports the one value a leaderboard shows


def setup_script(requirements: list[str]) -> str:
    """setup.sh for ``requirements`` (``pins.dependencies``): torch from PyTorch's CPU index, then the rest
    from the default index, each as pyproject.toml writes it (in single quotes for the shell, the quotes
    of its marker made double, which PEP 508 reads alike)."""
    from .pins import CPU_WHEELS, name_of, torch_pin

    def quoted(group):
        return " ".join(shlex.quote(r.replace("'", '"')) for r in group)

    torch = [r for r in requirements if name_of(r) == "torch"]
    rest = [r for r in requirements if name_of(r) != "torch"]
    return SETUP.format(index=CPU_WHEELS, torch_pin=torch_pin(KIT_ROOT), torch=quoted(torch), rest=quoted(rest))


def export(out_zip, config):
    """Write the autograder zip to ``out_zip`` (atomically) for the course ``config`` (its stages,
    points and visibility, shipped in ``kit/gradescope.json``). Returns the names it holds."""
    from ..errors import BuildError, GradingError
    from ..grading.config import GIVEN, given_code
    from .pins import dependencies

    try:
        given = given_code(config)
    except GradingError as exc:
        raise BuildError(str(exc)) from None
    constraints = KIT_ROOT / "constraints.txt"
    files = {  # name in the zip: (content, mode)
        "setup.sh": (setup_script(dependencies(KIT_ROOT)), 0o755),
        "run_autograder": (RUN, 0o755),
        "kit/constraints.txt": (constraints.read_bytes(), 0o644),
        "kit/" + CONFIG: (json.dumps(config.as_data()) + "\n", 0o644),
    }
    for path in runtime_files():
        files["kit/" + path.relative_to(KIT_ROOT).as_posix()] = (path.read_bytes(), 0o644)
    for module, code in given.items():  # the stages the course gives: graded with the kit's own code
        files[f"kit/{GIVEN}/{module}.py"] = (code, 0o644)

    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as z:
        for name, (content, mode) in files.items():
            info = zipfile.ZipInfo(name, date_time=(1980, 1, 1, 0, 0, 0))  # same kit, same bytes
            info.compress_type = zipfile.ZIP_DEFLATED
            info.external_attr = (stat.S_IFREG | mode) << 16  # unzip restores the modes from here
            z.writestr(info, content)
    write_atomically(out_zip, buffer.getvalue())
    return list(files)


def shipped_config():
    """The course configuration the zip was exported with (the defaults when there is none)."""
    from ..grading.config import CourseConfig, from_data

    shipped = KIT_ROOT / CONFIG
    return from_data(json.loads(shipped.read_text()), shipped) if shipped.is_file() else CourseConfig()


def results_for(submission):
    """Gradescope's results.json for ``submission``. Raises when the grader itself fails."""
    from ..errors import SubmissionError
    from ..grading.grade import grade
    from ..grading.results import ungradable
    from ..sandbox.runner import isolation_line
    from .report import render_table

    config = shipped_config()
    stages = config.stages
    print(f"attention-lab: grading {submission}, stages {', '.join(map(str, stages))}, with the kit in {KIT_ROOT}")
    try:
        graded = grade(submission, stages=set(stages), config=config, pictures="failed")
    except SubmissionError as exc:
        print(f"attention-lab: cannot grade the submission: {exc}")  # for the staff: the detail
        return ungradable(f"Your submission could not be graded: {exc.student}", exc.student, stages, config)
    print(render_table(graded.results, graded.seconds))  # for the staff: stdout stays hidden from students
    print(isolation_line(graded.isolation, verbose=True))
    for check_id, device, trace in graded.grader_errors:
        print(f"attention-lab: grader error in {check_id} on {device} (a bug of the kit):\n{trace}")
    return results_json(graded, config)


def results_json(graded, config) -> dict:
    """The results.json of a grading, the one serialiser of it: Gradescope's runner writes it, and so
    does ``attention-lab grade --json``, so that an instructor's trial run shows what students will see
    (a failed check's pictures inline in its output). A layer of the kit that did not hold the grading
    is said in the ``output`` on top, which Gradescope shows above the tests (``ISOLATION_NOTE``)."""
    from ..sandbox.runner import shortfall

    data = pictures_inline(graded.gradescope(leaderboard=config.leaderboard))
    said = shortfall(graded.isolation)
    if said:
        data["output"] = "\n\n".join(filter(None, [data.get("output"), ISOLATION_NOTE.format(said)]))
    return data


def pictures_inline(data: dict) -> dict:
    """A failed check's pictures into its output, which becomes HTML (``output_format``): the
    feedback as preformatted text, then each picture as an ``<img>`` with a ``data:`` URI, since
    Gradescope shows a test's output and nothing else of it."""
    from ..public.pictures import Picture

    for test in data.get("tests", []):
        extra = test.get("extra_data", {})
        drawn = extra.pop("pictures", None)
        if not extra:
            test.pop("extra_data", None)
        if drawn:
            said = f'<pre style="white-space: pre-wrap">{html.escape(wrapped(test["output"]))}</pre>'
            test["output"] = said + "".join(Picture(p["svg"], test["name"], kind=p["kind"], flagged=p["flagged"],
                                                    alt=p.get("alt", "")).html() for p in drawn)
            test["output_format"] = "html"
    return data


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m autograder.delivery.gradescope",
                                     description="grade ROOT/submission into ROOT/results/results.json")
    parser.add_argument("--root", type=Path, default=Path("/autograder"), help="Gradescope's folder (/autograder)")
    args = parser.parse_args(argv)
    try:
        data = results_for(args.root / "submission")
        code = 1 if data.get("extra_data", {}).get("regrade") else 0  # graded, but some checks need a fixed kit
    except Exception:  # GradingError, or anything unexpected: never the student's fault
        traceback.print_exc(file=sys.stdout)
        data = {"score": 0, "output": GRADER_FAILED, "stdout_visibility": "hidden", "tests": []}
        code = 1
    write_json(data, args.root / "results" / "results.json")
    return code


if __name__ == "__main__":
    sys.exit(main())
