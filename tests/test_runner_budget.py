"""What the grader reads of a child, and what it removes after it (``sandbox.runner``, ``sandbox.workspace``).

A result file is the child's word, written in a folder the submission can write too, so reading one
must take bounded time and memory whatever its bytes are (``load_result``, ``validate``). A workspace
holds whatever the child made in it, so removing one must never fail (``remove_tree``), and as root
each is a tmpfs of its own, bounded in bytes and files. The class-level attacks, graded end to end
beside honest students, are in ``test_class_zoo.py``.
"""
from __future__ import annotations

import fcntl
import io
import json
import os
import subprocess
import sys
import tempfile
import time
import tracemalloc
import zipfile
from pathlib import Path

import pytest
import torch

from autograder.intake.submission import open_submission
from autograder.sandbox import confine, runner, workspace, world
from autograder.sandbox.runner import RESULT_MAX_NODES, load_result, validate
from autograder.sandbox.workspace import Workspace, read_result, remove_tree
from tests.test_isolation import in_child

ROOT = Path(__file__).resolve().parent.parent
NOBODY = 65534


def saved(obj) -> bytes:
    buffer = io.BytesIO()
    torch.save(obj, buffer)
    return buffer.getvalue()


def rezipped(data: bytes, pickle: bytes | None = None, deflated=False) -> bytes:
    """The zip of torch.save ``data`` written again: its pickle replaced by ``pickle``, its records deflated."""
    out = io.BytesIO()
    with zipfile.ZipFile(io.BytesIO(data)) as z, zipfile.ZipFile(out, "w") as copy:
        for record in z.infolist():
            body = pickle if pickle is not None and record.filename.endswith("data.pkl") else z.read(record)
            copy.writestr(record.filename, body, zipfile.ZIP_DEFLATED if deflated else zipfile.ZIP_STORED)
    return out.getvalue()


def refusal(data) -> str:
    """The message of the error record ``load_result`` gives for ``data``; fails if it gave an observation."""
    record = load_result(data)
    assert set(record) == {"error"} and record["error"]["type"] == "BadResult", str(record)[:300]
    return record["error"]["message"]


def shared(levels, width):
    """One list held ``width`` times at every one of ``levels`` levels: a DAG of ``levels`` lists whose tree
    holds ``width ** levels``; pickle's memo writes it in about 2 bytes a reference."""
    nested = [0]
    for _ in range(levels):
        nested = [nested] * width
    return nested


# ---------------------------------------------------------------- validate


def test_plain_data_is_copied_as_a_tree():
    t = torch.arange(6.0).reshape(2, 3).t()  # a view: strides (1, 3)
    record = {"type": "Crash", "message": "raised"}
    copy = validate({"t": t, "nums": [1, 2.5, None, True, "s", (3, 4)], "empty": (), "a": record, "b": record})
    assert copy == {"t": t, "nums": [1, 2.5, None, True, "s", [3, 4]], "empty": [], "a": record, "b": record}
    assert copy["t"] is t and copy["a"] == copy["b"] and copy["a"] is not copy["b"]  # one dict held twice: two copies


@pytest.mark.parametrize("value, says", [
    (torch.nn.Parameter(torch.ones(2)), "Parameter is not plain data"),
    (torch.ones(2, requires_grad=True), "detached CPU tensor"),
    (torch.ones(2, device="meta"), "detached CPU tensor"),
    (torch.ones(2).to_sparse(), "dense tensor"),
    ({1, 2}, "set is not plain data"),
    ({1: "x"}, "keys must be strings"),
], ids=["subclass", "requires_grad", "meta", "sparse", "set", "int_keys"])
def test_what_is_not_plain_data_is_refused_and_named(value, says):
    with pytest.raises(ValueError, match=says) as caught:
        validate({"out": [0, value]})
    assert str(caught.value).startswith("result.out[1]")


def test_shared_references_cost_what_their_tree_would():
    """A list held 10,200 times at every one of 28 levels (what the 570 KB attack file holds), a cycle,
    and a list nested 100,000 deep: each refused at once, by the count of values, with no recursion."""
    looped = [1]
    looped.append(looped)
    deep = []
    for _ in range(100_000):
        deep = [deep]
    for value in (shared(28, 10_200), looped, deep):
        start = time.monotonic()
        with pytest.raises(ValueError, match=f"more than {RESULT_MAX_NODES} values"):
            validate(value)
        assert time.monotonic() - start < 0.5
    honest = []
    for _ in range(RESULT_MAX_NODES - 10):
        honest = [honest]
    assert type(validate(honest)) is list  # deep, within the budget: copied without recursion


def test_a_view_that_repeats_one_value_is_refused():
    """A stride of 0 shows 2^40 elements over one: a judge that touched them would need 4 TiB."""
    with pytest.raises(ValueError, match="tensors show more than 16 MiB"):
        validate({"out": torch.zeros(1).expand(2**40)})
    big = torch.rand(1400, 1400)  # a wrong layer's 1400 x 1400 softmax: 7.8 MB, which a picture shows
    assert validate({"weights": big})["weights"] is big
    with pytest.raises(ValueError, match="tensors show more than"):
        validate([big, big, big])  # counted each time it is held


# ---------------------------------------------------------------- load_result


def test_honest_results_of_every_dtype_load():
    tensors = {str(d): torch.zeros(3, dtype=d) for d in (
        torch.float32, torch.float64, torch.float16, torch.bfloat16, torch.bool, torch.uint8, torch.int64,
        torch.complex64, torch.uint16, torch.float8_e4m3fn)}
    loaded = load_result(saved({**tensors, "record": {"error": {"type": "Crash", "message": "x"}}, "t": (1, 2)}))
    assert {k: (v.dtype, v.shape) for k, v in loaded.items() if k in tensors} == \
        {k: (v.dtype, v.shape) for k, v in tensors.items()}
    assert loaded["t"] == [1, 2] and loaded["record"]["error"]["message"] == "x"
    assert refusal("the results of one child may hold 64 MiB together").endswith("hold 64 MiB together)")


def test_the_570_kb_shared_reference_file_is_refused_at_once():
    """The attack that took a grading process to 5.4 GiB: refused in well under a second, with little memory.
    A smaller one of the same shape, within the pickle's budget, is refused by ``validate``'s count."""
    for width, says, bound_s in ((10_200, "pickle larger than 64 KiB", 0.1),
                                 (1_000, f"more than {RESULT_MAX_NODES}", 1)):
        data = saved({"out": shared(28, width)})
        start = time.monotonic()
        message = refusal(data)
        seconds = time.monotonic() - start
        tracemalloc.start()
        try:
            refusal(data)
            peak = tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()
        assert says in message and seconds < bound_s and peak < 16 * 2**20, (len(data), message, seconds, peak)
    assert 560_000 < len(saved({"out": shared(28, 10_200)})) < 600_000


BOMBS = '''
import io, json, resource, sys, zipfile
import torch
sys.path.insert(0, sys.argv[1])
from autograder.sandbox.runner import load_result

def saved(obj, **kw):
    b = io.BytesIO(); torch.save(obj, b, **kw); return b.getvalue()

def deflated(numel):
    """torch.save of a tensor of ``numel`` float32 zeros, every record deflated (written in pieces: this
    process never holds the zeros)."""
    plain = zipfile.ZipFile(io.BytesIO(saved({"x": torch.zeros(1000)})))
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as z:
        for r in plain.infolist():
            if r.filename == "archive/data/0":
                with z.open(r.filename, "w") as f:
                    for _ in range(numel * 4 // 2**20):
                        f.write(bytes(2**20))
            else:
                body = plain.read(r)
                z.writestr(r.filename, body.replace(b"M\\xe8\\x03", b"J" + numel.to_bytes(4, "little"))
                           if r.filename.endswith("data.pkl") else body)
    return out.getvalue()

def with_pickle(pickle):
    plain = zipfile.ZipFile(io.BytesIO(saved({"x": 1})))
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as z:
        for r in plain.infolist():
            z.writestr(r.filename, pickle if r.filename.endswith("data.pkl") else plain.read(r))
    return out.getvalue()

bombs = {
    "deflated": deflated(2**28),  # 1 GiB of zeros in 1 MB
    "bytearray": with_pickle(b"\\x80\\x02cbuiltins\\nbytearray\\nJ" + (2**30).to_bytes(4, "little") + b"\\x85R."),
    "legacy": saved({"x": torch.zeros(10)}, _use_new_zipfile_serialization=False),
}
base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
said = {name: load_result(data)["error"]["message"] for name, data in bombs.items()}
print(json.dumps({"said": said, "grew": (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - base) * 1024,
                  "sizes": {k: len(v) for k, v in bombs.items()}}))
'''


def test_what_torch_load_would_inflate_or_allocate_is_refused():
    """torch.load would inflate a deflated record (1 GiB from 1 MB), run ``bytearray(2**30)`` (1 GiB of
    zeros from 800 bytes), and, in torch.save's old format, allocate storages as declared: each is refused
    before any of it is allocated (measured in a fresh process, whose peak memory must not grow)."""
    done = subprocess.run([sys.executable, "-c", BOMBS, str(ROOT)], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    report = json.loads(done.stdout.strip().splitlines()[-1])
    assert report["said"] == {
        "deflated": "the grader could not read this result (a compressed record)",
        "bytearray": "the grader could not read this result (its pickle names builtins bytearray, which no "
                     "result needs)",
        "legacy": "the grader could not read this result (not a zip file of torch.save)",
    }, report
    assert report["grew"] < 64 * 2**20 and report["sizes"]["bytearray"] < 2000, report
    assert report["sizes"]["deflated"] < 2 * 2**20, report


def test_a_zip_of_too_many_records_is_refused_before_it_is_parsed():
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as z:
        for i in range(runner.ZIP_MAX_MEMBERS + 1):
            z.writestr(f"archive/data/{i}", b"")
    start = time.monotonic()
    assert "more than 1024 records" in refusal(out.getvalue())
    assert time.monotonic() - start < 0.05
    assert "not a zip file" in refusal(b"")


def test_a_result_file_is_a_regular_file_within_its_limit(tmp_path):
    (tmp_path / "0.pt").write_bytes(b"x" * 100)
    (tmp_path / "1.pt").symlink_to(tmp_path / "0.pt")
    os.mkfifo(tmp_path / "2.pt")
    assert read_result(tmp_path / "0.pt", 100) == b"x" * 100
    assert read_result(tmp_path / "0.pt", 99) == "0.pt is larger than 99 bytes"  # its task's error, not a crash
    assert read_result(tmp_path / "1.pt", 100) is None and read_result(tmp_path / "2.pt", 100) is None
    assert read_result(tmp_path / "3.pt", 100) is None


# ---------------------------------------------------------------- remove_tree


def mess(top: Path, depth: int):
    """What a child may leave: folders ``depth`` deep, made with folder descriptors (no path is ever that
    long), every other one read-only or closed to everyone, each with a file, a FIFO and a link out."""
    outside = top.parent / "outside.txt"
    outside.write_text("kept")
    top.mkdir()
    here = os.open(top, os.O_RDONLY)
    for level in range(depth):
        os.mkdir("d", dir_fd=here)
        os.close(os.open("f", os.O_WRONLY | os.O_CREAT, 0o600, dir_fd=here))
        os.mkfifo("p", dir_fd=here)
        os.symlink(outside, "link", dir_fd=here)
        inner = os.open("d", os.O_RDONLY, dir_fd=here)
        if level % 2:
            os.fchmod(here, 0o500 if level % 4 == 1 else 0o000)
        os.close(here)
        here = inner
    os.close(here)
    return outside


def as_nobody(fn):
    """Run ``fn()`` as an ordinary user (a forked process that becomes ``NOBODY``): its return, or what it raised."""

    def become_nobody():
        os.setgroups([])
        os.setgid(NOBODY)
        os.setuid(NOBODY)
        return fn()

    return in_child(become_nobody)


@pytest.mark.parametrize("who", ["root", "ordinary"])
def test_a_deep_closed_tree_is_removed_without_recursion(who, tmp_path):
    """5,000 folders deep, closed and read-only ones among them: all gone, the file a link names kept."""
    if who == "ordinary" and not workspace.is_root():
        who = "this user"  # an ordinary user already
    top = Path(tempfile.mkdtemp(prefix="runner-budget-")) / "tree"  # in /tmp: a place an ordinary user can reach

    def make_and_remove():
        outside = mess(top, 5000)
        start = time.monotonic()
        left = remove_tree(top)
        return [left, time.monotonic() - start, outside.read_text(), top.exists()]

    try:
        if who == "ordinary":
            os.chown(top.parent, NOBODY, NOBODY)
            said = as_nobody(make_and_remove)
            assert "ok" in said, said
            left, seconds, outside, exists = said["ok"]
        else:
            left, seconds, outside, exists = make_and_remove()
    finally:
        remove_tree(top.parent)
    assert left is None and not exists and outside == "kept", (left, exists)
    assert seconds < 20


def test_what_cannot_be_removed_is_said_not_raised(tmp_path, capsys, monkeypatch):
    """A mount point inside the tree (another file system: never walked into) is left and said, in one line
    on stderr from ``Workspace.remove``; everything else goes."""
    if not workspace.is_root():
        pytest.skip("needs root, to mount a file system inside the tree")
    monkeypatch.setattr(workspace, "is_root", lambda: False)  # a workspace on disk, walked by remove_tree
    ws = Workspace(open_submission(ROOT / "solutions"))
    assert ws.disk == workspace.FOLDER and "only root" in ws.disk_why
    inner = ws.child_dir() / "deep"
    mess(inner, 1200)
    spot = ws.home / "mounted"
    spot.mkdir()
    world.tmpfs(spot, 2**20, 16, 0o700)
    (spot / "inside").write_text("not walked into")
    try:
        ws.remove()
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and err.startswith("attention-lab: could not remove ") and "a mount point" in err
        assert (spot / "inside").read_text() == "not walked into"
        assert sorted(p.name for p in ws.root.rglob("*")) == ["home", "inside", "mounted"]
    finally:
        world.libc.umount2(os.fsencode(spot), world.MNT_DETACH)
    assert remove_tree(ws.root) is None and not ws.root.exists()


# ---------------------------------------------------------------- the workspace's disk


def mounted(path) -> bool:
    return any(line.split()[4] == str(path) for line in Path("/proc/self/mountinfo").read_text().splitlines())


def fill(folder: Path, limit=2**30) -> int:
    """Bytes written into ``folder`` in files of 8 MiB until the disk says no (or ``limit``)."""
    written, n = 0, 0
    try:
        while written < limit:
            with open(folder / f"f{n}", "wb") as f:
                n += 1
                written += f.write(b"\0" * 2**23)
    except OSError as exc:
        assert exc.strerror == "No space left on device"
    return written


def test_as_root_each_workspace_home_and_output_folder_is_a_bounded_tmpfs():
    if not workspace.is_root():
        pytest.skip("only root may mount a tmpfs for the workspace")
    ws = Workspace(open_submission(ROOT / "solutions"), workspace.CHILD_UID, workspace.CHILD_UID)
    try:
        assert ws.disk == workspace.TMPFS and ws.disk_why is None and "256 MiB" in ws.disk_limits
        first = ws.child_dir()
        assert all(mounted(p) for p in (ws.root, ws.home, first))
        assert os.stat(first).st_uid == os.stat(ws.home).st_uid == workspace.CHILD_UID
        assert fill(first) <= workspace.OUTPUT_BYTES and fill(ws.home) <= world.HOME_BYTES
        (ws.control / "child1.stderr").write_bytes(b"x" * 2**20)
        second = ws.child_dir()  # the first is released: its space and its error output
        assert not first.exists() and not (ws.control / "child1.stderr").exists() and mounted(second)
    finally:
        ws.remove()
    assert not ws.root.exists() and not mounted(ws.root) and not mounted(ws.home)


def test_a_killed_gradings_tmpfs_is_reclaimed_by_the_next():
    """``kill -9`` leaves a workspace mounted: the next grading unmounts it once no process holds its lock."""
    if not workspace.is_root():
        pytest.skip("only root may mount a tmpfs for the workspace")
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # a grading that dies without removing its workspace
        try:
            os.write(write, str(Workspace(open_submission(ROOT / "solutions")).root).encode())
        finally:
            os._exit(0)
    os.close(write)
    with os.fdopen(read) as f:
        dead = Path(f.read())
    os.waitpid(pid, 0)
    alive = Workspace(open_submission(ROOT / "solutions"))  # reclaims the dead one as it begins
    try:
        assert not dead.exists() and not mounted(dead)
        workspace.reclaim_stale()  # and leaves a living one alone
        assert mounted(alive.root)
    finally:
        alive.remove()


def test_a_grading_starting_beside_never_reclaims_a_workspace_being_made(monkeypatch):
    """Another grading's ``reclaim_stale`` may run at any moment of a workspace's making, the instant
    before its lock is taken included (seen on a 16-core machine: eight gradings at once, one
    workspace unmounted under its grading). Run it there: the workspace is kept."""
    if not workspace.is_root():
        pytest.skip("only root may mount a tmpfs for the workspace")
    real_flock, beside = fcntl.flock, []

    def reclaim_first(fd, how):
        if not beside:
            beside.append(True)
            workspace.reclaim_stale()  # the other grading, in the window
        return real_flock(fd, how)

    monkeypatch.setattr(workspace.fcntl, "flock", reclaim_first)
    ws = Workspace(open_submission(ROOT / "solutions"))
    try:
        assert beside and mounted(ws.root) and (ws.control / "lock").exists()
        assert (ws.submission / "attention_lab" / "causal.py").exists()
    finally:
        ws.remove()


def test_the_childs_home_is_a_tmpfs_of_its_own_in_its_root(tmp_path):
    """In a root of its own the child's home is a fresh tmpfs: it fills that (ENOSPC at ``HOME_BYTES``),
    never the workspace's folder, and what it wrote is gone with it."""
    if not (workspace.is_root() and workspace.children_own_root()):
        pytest.skip("needs root and mount namespaces")
    ws = tmp_path / "ws"
    for name in ("submission/attention_lab", "home", "out", "control"):
        (ws / name).mkdir(parents=True)

    def in_its_root():
        assert confine.namespaces()["mounts"]
        allowed = world.World.of_child(workspace.site_paths(), ws / "submission", ws / "home", ws / "out", [])
        world.own_root(allowed, ws / "control" / "stash", NOBODY, NOBODY)
        home = os.stat(ws / "home")
        return [fill(ws / "home"), home.st_uid, oct(home.st_mode & 0o777)]

    said = in_child(in_its_root)
    assert "ok" in said, said
    written, owner, mode = said["ok"]
    assert written <= world.HOME_BYTES and owner == NOBODY and mode == "0o700", said
    assert not list((ws / "home").iterdir())  # the workspace's own home folder was never written
