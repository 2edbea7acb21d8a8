"""The class-level hostile zoo: what one student hands in must not stop, slow or poison a class.

Each case below is one student's entry, graded by ``grade-all`` in a process of its own beside two honest
students (ann: the reference; bob: the untouched stubs). ann and bob must get their normal points,
whole records and a CSV row; the hostile student gets a record too (their points, or 0 and the one
sentence that says which rule their file broke), never a crash of the class, a row blamed on the
grader, or a hang. Each run is held to ``BOUND_S`` seconds and ``PEAK_BYTES`` of resident memory
(the largest of grade-all's process and every process it started), measured here, above what CUDA itself
holds where a GPU is (``cuda_start_bytes``).
"""
from __future__ import annotations

import base64
import csv
import functools
import io
import json
import os
import re
import shutil
import subprocess
import tempfile
import zipfile
from pathlib import Path

import pytest

from autograder.authoring.course import notebook_name
from autograder.curriculum import STAGES
from autograder.grading.config import CourseConfig
from autograder.intake.notebooks import module_cell
from tests.forked import ForkedPython
from tools.zoo import helper

STAGES_GRADED = (1, 3)
BOUND_S = 60  # one grade-all of three students, stages 1 and 3, in a process of its own: about 3 s measured
PEAK_BYTES = 2**30  # the largest of grade-all, its fork server and the children: about 300 MiB measured
RECORD_MAX_BYTES = 6 * 2**20  # pictures are capped at 4 MiB of SVG per grading (grade.PICTURES_MAX_BYTES)
ROOT = Path(__file__).resolve().parent.parent
BIG_SOFTMAX = '''

class CausalAttention(CausalAttention):
    """Wrong on purpose (no scaling), and its last softmax is 1400 x 1400: a picture of it must stay small."""

    def forward(self, x):
        b, n, _ = x.shape
        scores = self.W_query(x) @ self.W_key(x).transpose(1, 2)
        scores = scores.masked_fill(self.mask.bool()[:n, :n], -torch.inf)
        out = self.dropout(torch.softmax(scores, dim=-1)) @ self.W_value(x)
        torch.softmax(torch.rand(1400, 1400), dim=-1)  # the last softmax: what a picture of the weights shows
        return out
'''


def reference(folder: Path) -> Path:
    shutil.copytree(ROOT / "solutions" / "attention_lab", folder / "attention_lab")
    return folder


def notebook(path: Path, cells) -> Path:
    path.write_text(json.dumps({"cells": cells, "metadata": {}, "nbformat": 4, "nbformat_minor": 5}))
    return path


def code_cell(source):
    return {"cell_type": "code", "metadata": {}, "outputs": [], "execution_count": None, "source": source}


def zipped(path: Path, members: dict) -> Path:
    with zipfile.ZipFile(path, "w") as z:
        for name, text in members.items():
            z.writestr(name, text)
    return path


def deep_tree(folder: Path, depth=1100):
    reference(folder)
    here = os.open(folder / "attention_lab", os.O_RDONLY)
    try:
        for _ in range(depth):
            os.mkdir("d", dir_fd=here)
            inner = os.open("d", os.O_RDONLY, dir_fd=here)
            os.close(here)
            here = inner
    finally:
        os.close(here)


SIMPLE = (ROOT / "solutions" / "attention_lab" / "simple.py").read_text()

# Attacks on what the grader reads and removes, by a student whose stage 1 is the reference's plus this.
ANSWERS_FOR_ITSELF = helper("answers_for_itself")  # writes result files, and answers on the child's FIFO
FORGES_LATER_RESULTS = ANSWERS_FOR_ITSELF + '''

def softmax_naive(scores):
    """Writes results for the requests after this one (each says LEAKED), answers them, and ends the child: a
    grader that counted whatever it finds, or took an answer it had not asked for yet, would take them."""
    mine = _asked()
    forged = {"error": {"type": "Forged", "message": "LEAKED: the result of a task never run"}}
    for n in range(mine + 1, mine + 300):
        torch.save({"book": forged, "extra": forged}, f"{n}.pt")  # what stage 1's probes return
    _answers(range(mine + 1, mine + 300))
    _os._exit(0)
'''
SHARED_REFERENCES = ANSWERS_FOR_ITSELF + '''

_nested = [0]
for _ in range(28):
    _nested = [_nested] * 10_200  # one list held 10,200 times at every level: 570 KB, as pickle's memo writes it
_softmax_stable, _forged = softmax_stable, []


def softmax_stable(scores):
    """Right; but the first time, a result of shared references in its place, answered at once, before the
    child's own: its copy as a tree (what the grader once made of it) would hold 10,200 ** 28 lists. The
    answer has no token (the request's, which only the loop that read it holds): the grader waits for the
    child's own, and never reads the forged file."""
    if not _forged:
        _forged.append(_asked())
        torch.save({"out": _nested}, f"{_forged[0]}.pt")
        _answers(_forged)
        import time
        time.sleep(1.0)  # the grader reads the file it was answered before the child's own replaces it
    return _softmax_stable(scores)
'''
DEEP_TREE_AT_RUN_TIME = '''

import os as _os


def _deep_tree(where, depth=1200):
    """Folders 1,200 deep, each made read-only once the next is in it: past shutil.rmtree's recursion."""
    here = _os.open(where, _os.O_RDONLY)
    name = f"deep{_os.getpid()}"
    for level in range(depth):
        _os.mkdir(name, dir_fd=here)
        inner = _os.open(name, _os.O_RDONLY, dir_fd=here)
        if level:  # not ``where`` itself: the child writes its results there
            _os.chmod(here, 0o500)
        _os.close(here)
        here, name = inner, "d"
    _os.close(here)


_deep_tree(_os.environ["HOME"])
_deep_tree(".")  # the child's working folder: its output folder
'''
FILLS_HOME_AND_OUTPUT = '''

import os as _os


def _fill(where, cap=20):
    """Files of 8 MiB, then empty ones, until the disk says no: what stopped it. At most ``cap`` of the
    first (160 MiB, more than its home's and output folder's tmpfs hold) and 10,000 of the second, so that
    where nothing else bounds it (a folder on a test machine's disk) the disk is spared."""
    said = []
    for names, data in ((range(cap), b"\\0" * 2**23), (range(cap, cap + 10_000), b"")):
        try:
            for n in names:
                with open(_os.path.join(where, f"f{n}"), "wb") as f:
                    f.write(data)
            said.append("not full")
        except OSError as exc:
            said.append(exc.strerror)
    return " and ".join(said)


def softmax_naive(scores):
    home, out = _fill(_os.environ["HOME"]), _fill(".")
    for n in (0, *range(20, 40)):  # room for the child to write this task's result
        _os.remove(f"f{n}")
    raise RuntimeError(f"bytes and files: its home {home}; its output folder {out}")
'''


def hostile_simple(folder: Path, code: str) -> Path:
    """A student whose stage 1 is the reference's with ``code`` added (its definitions replace the reference's)."""
    reference(folder)
    (folder / "attention_lab" / "simple.py").write_text(SIMPLE + code)
    return folder

# name -> (how the hostile entry is made in the class folder, its stage 1 points or None when it is
# not graded at all, text its record's output or first failed check must hold)
CASES = {
    "zero_notebook": (lambda c: (c / "zed").mkdir() or (c / "zed" / "stage1_simple.ipynb").symlink_to("/dev/zero"),
                      None, "stage1_simple.ipynb is a symbolic link, not a notebook that can be read"),
    "fifo_notebook": (lambda c: (c / "fifo").mkdir() or os.mkfifo(c / "fifo" / "stage1_simple.ipynb"),
                      None, "stage1_simple.ipynb is a FIFO, not a notebook that can be read"),
    "fifo_module": (lambda c: (reference(c / "fay") / "attention_lab" / "causal.py").unlink()
                    or os.mkfifo(c / "fay" / "attention_lab" / "causal.py"), 11, "causal.py is a FIFO"),
    "deep_tree": (lambda c: deep_tree(c / "deep"), 11, None),
    "latin1_name": (lambda c: reference(c / os.fsdecode(b"Jos\xe9")), 11, None),
    "newline_name": (lambda c: reference(c / "eve\nTotal 999 of 999"), 11, None),
    "formula_names": (lambda c: [reference(c / n) for n in ('=HYPERLINK("x")', "@SUM(1,1)", "+1", "-2")], 11, None),
    "escape_name": (lambda c: reference(c / "\x1b]0;pwned\x07\x1b[2J"), 11, None),
    "big_softmax": (lambda c: (reference(c / "sam") / "attention_lab" / "causal.py").write_text(
        (ROOT / "solutions" / "attention_lab" / "causal.py").read_text() + BIG_SOFTMAX), 11, None),
    "nested_stray_notebook": (lambda c: (reference(c / "nest") / "scratch.ipynb").write_text(
        '{"cells": ' + "[" * 100_000 + "]" * 100_000 + "}"), 11, None),
    "numbers_as_source": (lambda c: (c / "num").mkdir() or notebook(
        c / "num" / f"{notebook_name(STAGES[1])}.ipynb", [code_cell([1, 2, 3])]), None,
                          "not a valid notebook: cells[0].source"),
    "lone_surrogate": (lambda c: (c / "sur").mkdir() or (c / "sur" / f"{notebook_name(STAGES[1])}.ipynb").write_text(
        json.dumps({"cells": [code_cell(module_cell("simple", "x = '\\ud800'\n"))], "metadata": {}, "nbformat": 4,
                    "nbformat_minor": 5}).replace("\\\\ud800", "\\ud800")), None, "not valid Unicode"),
    "long_zip_member": (lambda c: zipped(c / "zip1.zip", {"attention_lab/" + "a" * 300 + ".py": "x"}), None,
                        "part longer than 255 bytes"),
    "zip_file_where_folder": (lambda c: zipped(c / "zip2.zip",
                                               {"attention_lab": "x", "attention_lab/simple.py": SIMPLE}),
                              None, "cannot be unpacked"),
    # Graded before ann and bob (names sort first): what the child leaves must not reach them.
    "forges_later_results": (lambda c: hostile_simple(c / "abe", FORGES_LATER_RESULTS), 10,
                             "exited (code 0) while this check ran"),
    "shared_reference_result": (lambda c: hostile_simple(c / "abi", SHARED_REFERENCES), 11, None),
    "deep_tree_at_run_time": (lambda c: hostile_simple(c / "ada", DEEP_TREE_AT_RUN_TIME), 11, None),
    "fills_home_and_output": (lambda c: hostile_simple(c / "aaron", FILLS_HOME_AND_OUTPUT), 10,
                              "No space left on device"),
}


@functools.cache
def cuda_start_bytes() -> int:
    """What starting CUDA, as a grading child starts it (the driver, cuBLAS, the attention kernels), adds to
    a process's resident memory; 0 where no GPU is. On a GPU machine each child holds it, and it is
    CUDA's, not the grader's: an H100 run measured 1.01 GiB for the class with a 1400 x 1400 softmax in it."""
    script = (  # the peak after CUDA's start, less the peak of the process before it (Python and torch)
        "import resource, torch\n"
        "from autograder.sandbox.child import _warm_cuda\n"
        "before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss\n"
        "if torch.cuda.is_available():\n"
        "    _warm_cuda()\n"
        "print((resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before) * 1024)\n"
    )
    code, stdout = ForkedPython(script, cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)}).result(timeout=BOUND_S)
    assert code == 0, stdout
    return int(stdout.strip().splitlines()[-1])


def run_grade_all(folder: Path, out: Path, as_root=True, without=()):
    """grade-all in a process of its own (forked from one that imported torch); returns (exit code, stderr,
    seconds, peak resident bytes above what CUDA itself holds).
    ``as_root=False``: as a grader that is not root does it (no change of user), as the hostile zoo does;
    ``without``: kernel layers (``protocol.KERNEL_LAYERS``) taken away, as a machine without them would grade."""
    script = (
        "import json, resource, sys, time\n"
        "from autograder.sandbox import protocol, workspace\n"
        + ("" if as_root else "workspace.is_root = lambda: False\n")
        + f"protocol.KERNEL_LAYERS = tuple(l for l in protocol.KERNEL_LAYERS if l not in {tuple(without)!r})\n"
        "from autograder.cli import main\n"
        "start = time.monotonic()\n"
        f"code = main(['grade-all', {str(folder)!r}, '--out', {str(out)!r}, '--jobs', '1',"
        f" {', '.join(repr(a) for s in STAGES_GRADED for a in ('--stage', str(s)))}])\n"
        "peak = max(resource.getrusage(w).ru_maxrss for w in (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN))\n"
        "print(json.dumps({'code': code, 'seconds': time.monotonic() - start, 'peak': peak * 1024}))\n"
    )
    # forked from a process that has imported torch: grade-all's own run is the point, not its start-up
    done = ForkedPython(script, cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)})
    code, stdout = done.result(timeout=BOUND_S * 3)
    assert code == 0, f"the grade-all process ended with {code}:\n{done.stderr[-3000:]}"
    said = json.loads(stdout.strip().splitlines()[-1])
    return said["code"], done.stderr, said["seconds"], said["peak"] - cuda_start_bytes()


@pytest.mark.parametrize("case", CASES)
def test_one_student_cannot_stop_a_class(case, tmp_path):
    make, points, says = CASES[case]
    klass = tmp_path / "submitted"
    reference(klass / "ann")
    shutil.copytree(ROOT / "assignments" / "attention_lab", klass / "bob" / "attention_lab")
    before = set(os.listdir(klass))
    make(klass)
    hostile = sorted(set(os.listdir(klass)) - before)
    out = tmp_path / "grades.csv"
    try:
        code, stderr, seconds, peak = run_grade_all(klass, out)
    finally:  # pytest's own clean-up recurses, and a tree 1,100 deep is past Python's recursion limit
        subprocess.run(["rm", "-rf", str(klass / "deep")], check=True)
    assert code == 0, f"{case}: grade-all exited {code} (a row blamed on the grader?):\n{stderr[-3000:]}"
    assert seconds < BOUND_S and peak < PEAK_BYTES, (case, seconds, peak)
    assert "Traceback" not in stderr, stderr[-3000:]
    assert "\x1b" not in stderr and "\x07" not in stderr, "a name reached the terminal raw"
    full = {s: CourseConfig().max_points(s) for s in STAGES_GRADED}
    rows = {r["student"]: r for r in csv.DictReader(io.StringIO(out.read_text()))}
    assert rows["ann"]["total"] == str(sum(full.values())) and rows["bob"]["total"] == "0", rows
    records = tmp_path / "grades-results"
    for honest in ("ann", "bob"):
        assert json.loads((records / f"{honest}.json").read_text())["extra_data"]["student"] == honest
    assert len(rows) == 2 + len(hostile), f"{case}: a student has no CSV row: {sorted(rows)}"
    for name in hostile:
        student = name.removesuffix(".zip").removesuffix(".ipynb")
        record_path = records / f"{student}.json"
        assert record_path.stat().st_size < RECORD_MAX_BYTES, (case, record_path.stat().st_size)
        assert "LEAKED" not in record_path.read_text(), f"{case}: a forged result was counted"
        record = json.loads(record_path.read_text())
        stage1 = record["extra_data"]["stage_points"]["1"]
        if points is None:
            assert stage1 == 0 and record["output"].startswith("Not graded"), (case, record["output"])
        else:
            assert stage1 == points, (case, record["extra_data"])
        if says:
            failed = [t["output"] for t in record["tests"] if t["status"] == "failed"]
            assert says in record.get("output", "") or any(says in f for f in failed), (case, record.get("output"))
    for cell in [v for r in rows.values() for v in r.values()]:
        assert not cell.startswith(("=", "+", "-", "@")), f"a cell a spreadsheet would run: {cell!r}"


@pytest.mark.parametrize("as_root", [True, False], ids=["root", "not_root"])
def test_what_a_child_leaves_is_cleaned_up(as_root, tmp_path):
    """The deep tree and the full disk, graded before two honest students by a grader that is root
    (each workspace, home and output folder a tmpfs, unmounted after) and by one that is not (a workspace
    on disk, which clean-up walks; the child's home a tmpfs in its own root, its output folder one in the
    fork server's mount namespace): exit 0, normal points, a full disk for the filler alone, nothing said
    about what could not be removed, and no workspace of this class left in the temporary folder."""
    klass = tmp_path / "submitted"
    reference(klass / "ann")
    shutil.copytree(ROOT / "assignments" / "attention_lab", klass / "bob" / "attention_lab")
    for case in ("deep_tree_at_run_time", "fills_home_and_output"):
        CASES[case][0](klass)
    # Finds this class's workspaces among those of gradings beside it: the full path, since two workers
    # running this test's two variants at once (-n 2 without loadscope) both name their tmp_path ..._cl0.
    mark = f"# graded by {tmp_path}\n"
    for student in ("ada", "aaron"):
        with open(klass / student / "attention_lab" / "simple.py", "a") as f:
            f.write(mark)
    out = tmp_path / "grades.csv"
    code, stderr, seconds, peak = run_grade_all(klass, out, as_root=as_root)
    assert code == 0, stderr[-3000:]
    assert "could not remove" not in stderr and "Traceback" not in stderr, stderr[-3000:]
    assert seconds < BOUND_S and peak < PEAK_BYTES, (seconds, peak)
    rows = {r["student"]: r for r in csv.DictReader(io.StringIO(out.read_text()))}
    assert rows["ann"]["total"] == str(sum(CourseConfig().max_points(s) for s in STAGES_GRADED)), rows
    assert rows["bob"]["total"] == "0" and set(rows) == {"aaron", "ada", "ann", "bob"}, rows
    # Its home (the child's own root) and its output folder (the workspace's tmpfs as root, the fork
    # server's as an ordinary user) were full long before 160 MiB and 10,000 files.
    record = json.loads((tmp_path / "grades-results" / "aaron.json").read_text())
    said = next(t["output"] for t in record["tests"] if t["number"] == "s1.softmax_naive")
    assert said.count("No space left on device") >= 2 and "not full" not in said, said
    left = []
    for workspace in Path(tempfile.gettempdir()).glob("attention-lab-*"):
        try:
            if mark in (workspace / "submission" / "attention_lab" / "simple.py").read_text():
                left.append(workspace)
        except OSError:  # another grading's, or not a workspace
            pass
    assert not left, f"workspaces left behind (a tmpfs still mounted would show its files too): {left}"


def test_the_moss_export_writes_only_what_intake_read(tmp_path):
    """A module linked to a file only root may read is not copied to the folder an instructor uploads
    to a third party; a notebook with a lone surrogate is named and left out, and the export goes on."""
    from autograder.delivery.plagiarism import export

    klass = tmp_path / "submitted"
    reference(klass / "ann")
    secret = tmp_path / "secret.txt"
    secret.write_text("LEAKED: a file only root may read")
    secret.chmod(0o600)
    bob = reference(klass / "bob") / "attention_lab"
    (bob / "causal.py").unlink()
    (bob / "causal.py").symlink_to(secret)
    CASES["lone_surrogate"][0](klass)  # "sur": a notebook whose module cell holds a lone surrogate
    CASES["formula_names"][0](klass)
    out, said = tmp_path / "for-moss", []
    skipped = export(klass, out, log=said.append)
    assert set(skipped) == {"sur"} and "not valid Unicode" in skipped["sur"], skipped
    assert (out / "submissions" / "ann" / "causal.py").read_text() == (bob.parent.parent / "ann" / "attention_lab"
                                                                      / "causal.py").read_text()
    bob = out / "submissions" / "bob"
    assert (bob / "simple.py").exists() and not (bob / "causal.py").exists()
    assert not [p for p in out.rglob("*") if p.is_file() and "LEAKED" in p.read_text(errors="replace")]
    assert len(said) == 1 and "sur" in said[0]


@pytest.mark.parametrize("case", [c for c, (_, points, _) in CASES.items() if points is None])
def test_grade_refuses_a_malformed_submission_in_one_sentence(case, tmp_path, capsys):
    """`attention-lab grade` on the same entries: exit 2 (the student's), and one line on stderr that
    names the file and the rule it broke; never a traceback, never exit 1 (the grader's)."""
    from autograder.cli import main

    make, _, says = CASES[case]
    klass = tmp_path / "submitted"
    klass.mkdir()
    make(klass)
    (entry,) = list(klass.iterdir())
    assert main(["grade", str(entry), "--stage", "1"]) == 2
    err = capsys.readouterr().err
    problem = [line for line in err.splitlines() if line.startswith("attention-lab: ")]
    assert len(problem) == 1 and says in problem[0] and "Traceback" not in err, err


def test_the_report_of_a_huge_softmax_stays_small(tmp_path):
    """The 1400 x 1400 softmax, graded with --html and --json: both files stay a few MiB (they were
    hundreds of MB when a heatmap drew one rectangle per value)."""
    from autograder.cli import main

    CASES["big_softmax"][0](tmp_path)
    report, results = tmp_path / "report.html", tmp_path / "results.json"
    assert main(["grade", str(tmp_path / "sam"), "--stage", "3", "--html", str(report), "--json", str(results)]) == 0
    assert report.stat().st_size < RECORD_MAX_BYTES and results.stat().st_size < RECORD_MAX_BYTES
    # inline, as on Gradescope
    shown = [base64.b64decode(uri).decode() for t in json.loads(results.read_text())["tests"]
             for uri in re.findall(r'src="data:image/svg\+xml;base64,([^"]+)"', t["output"])]
    assert shown and "drawn in blocks" in "".join(shown)
