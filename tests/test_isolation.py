"""The child's world (``sandbox.world``): what graded code can read and write, layer by layer.

The hostile zoo (``test_zoo_hostile.py``) attacks through a submission and the whole grader; these
tests look at the kernel's layers on their own, with the audit hook left out, as code that got past
it (native code, ctypes) would meet them; grade the bundled material with layers taken away, as a
machine without them would; and grade as a real ordinary user, not only as root told not to drop.

CI sets ``ATTENTION_LAB_ISOLATION_TESTS=required``: a test that needs Landlock or namespaces then
fails, instead of skipping, on a machine without them.
"""
from __future__ import annotations

import ctypes
import dataclasses
import errno
import json
import os
import platform
import re
import resource
import select
import shutil
import signal
import socket
import struct
import subprocess
import sys
import sysconfig
import threading
import time
from pathlib import Path

import pytest

from autograder.grading.config import CourseConfig
from autograder.grading.grade import grade
from autograder.sandbox import confine, linux, protocol, runner, syscalls, workspace, world
from autograder.sandbox.world import World
from tools.zoo import HOSTILE, WRONG, assemble, plant, read_entry

REQUIRED = os.environ.get("ATTENTION_LAB_ISOLATION_TESTS") == "required"


def needs(ok, why):
    if not ok:
        (pytest.fail if REQUIRED else pytest.skip)(why)


def in_child(fn, *args) -> dict:
    """Run ``fn(*args)`` in a forked process; return the JSON-able dict it returns."""
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(read)
        try:
            result = {"ok": fn(*args)}
        except BaseException as exc:  # noqa: BLE001 - everything goes back to the test
            result = {"raised": f"{type(exc).__name__}: {exc}"}
        os.write(write, json.dumps(result).encode())
        os._exit(0)
    os.close(write)
    with os.fdopen(read, "rb") as f:
        data = f.read()
    os.waitpid(pid, 0)
    return json.loads(data)


@pytest.fixture
def grounds(tmp_path):
    """A workspace laid out as the runner's (submission, home, out), with secrets planted around it:
    a classmate's file beside it, a file in /tmp, the kit's checkout; and the places a write must not reach."""
    ws = tmp_path / "ws"
    for name in ("submission/attention_lab", "home", "out", "control"):
        (ws / name).mkdir(parents=True)
    (ws / "submission/attention_lab/simple.py").write_text("x = 1\n")
    (ws / "control/job.json").write_text("the job: LEAKED")
    classmate = tmp_path / "classmate.py"
    classmate.write_text("LEAKED: a classmate's work")
    return {"ws": ws, "classmate": classmate}


def enclose(ws, layers):
    """What the child does before student code runs, without the audit hook: namespaces, a root of
    its own, Landlock, the syscall filter, each if named in ``layers``."""
    allowed = World.of_child(workspace.site_paths(), ws / "submission",
                             ws / "home", ws / "out", [str(p) for p in workspace.secrets()])
    done = {}
    if "root" in layers:
        assert confine.namespaces()["mounts"]
        world.own_root(allowed, ws / "control" / "stash")
        done["root"] = True
    if "landlock" in layers:
        done["landlock"] = world.landlock(allowed)
    if "seccomp" in layers:
        filtered()
        done["seccomp"] = True
    return done


def native_open(path, flags):
    """open() through libc, as native code would: no audit hook sees it."""
    libc = ctypes.CDLL(None, use_errno=True)
    fd = libc.open(os.fsencode(str(path)), flags, 0o644)
    if fd < 0:
        return f"refused ({os.strerror(ctypes.get_errno())})"
    os.close(fd)
    return "opened"


def attempts(ws, classmate):
    """What code that got past the audit hook tries, through libc (ctypes) and os: {what: outcome}."""
    outcome = {}

    for what, path in {"classmate": classmate, "job file": ws / "control/job.json",
                       "golden data": workspace.KIT_PACKAGE / "grading/golden/golden.pt",
                       "reference": workspace.KIT_ROOT / "solutions/attention_lab/causal.py",
                       "checkout": workspace.KIT_ROOT / "README.md", "home": Path("/root/.bashrc"),
                       "passwd shadow": Path("/etc/shadow")}.items():
        if path.exists():
            outcome[f"read {what} (libc)"] = native_open(path, os.O_RDONLY)
    site = Path(sysconfig.get_paths()["purelib"])
    for what, path in {"site-packages": site / "zz-isolation-test.pth", "tmp": Path("/tmp/zz-isolation-test"),
                       "beside": classmate.parent / "zz-isolation-test"}.items():
        outcome[f"write {what} (libc)"] = native_open(path, os.O_WRONLY | os.O_CREAT)
        try:
            with open(path, "w") as f:
                f.write("LEAKED")
            outcome[f"write {what} (os)"] = "opened"
        except OSError as exc:
            outcome[f"write {what} (os)"] = f"refused ({exc.strerror})"
    outcome["own submission"] = native_open(ws / "submission/attention_lab/simple.py", os.O_RDONLY)
    outcome["own home"] = native_open(ws / "home/scratch", os.O_WRONLY | os.O_CREAT)
    outcome["torch"] = native_open(Path(__import__("torch").__file__), os.O_RDONLY)
    return outcome


def assert_confined(outcome, ws, classmate):
    reached = {k: v for k, v in outcome.items() if k.startswith(("read", "write")) and v == "opened"}
    assert not reached, f"reached outside its world: {reached}"
    assert outcome["own submission"] == outcome["own home"] == outcome["torch"] == "opened", outcome
    for path in (Path(sysconfig.get_paths()["purelib"]) / "zz-isolation-test.pth", Path("/tmp/zz-isolation-test"),
                 classmate.parent / "zz-isolation-test"):
        assert not path.exists(), f"{path} was written"


def test_landlock_alone_closes_native_reads_and_writes(grounds):
    """Landlock, with no namespace and no audit hook: libc's open() reaches nothing outside the world."""
    needs(world.landlock_abi() > 0, "this kernel has no Landlock")
    outcome = in_child(lambda: (enclose(grounds["ws"], {"landlock"}), attempts(grounds["ws"], grounds["classmate"]))[1])
    assert "ok" in outcome, outcome
    assert_confined(outcome["ok"], grounds["ws"], grounds["classmate"])


def test_own_root_alone_shows_nothing_but_the_world(grounds):
    """A root of its own, no Landlock: the kit, the classmate and /tmp are not there at all; the
    runtime is read-only, and what the child writes is not a place code can be loaded from."""
    needs(workspace.is_root() and workspace.children_own_root(), "needs root and mount namespaces")

    def look():
        enclose(grounds["ws"], {"root"})
        outcome = attempts(grounds["ws"], grounds["classmate"])
        outcome["listing of /"] = sorted(os.listdir("/"))
        cgroup = next((p for p in Path("/sys/fs/cgroup").rglob("*") if p.is_file() and os.access(p, os.W_OK)), None)
        if cgroup is not None:  # a mount below a read-only bind (/sys/fs/cgroup) is read-only as well
            outcome["write a cgroup file (libc)"] = native_open(cgroup, os.O_WRONLY)
        outcome["kit there"] = [p.name for p in (workspace.KIT_PACKAGE, workspace.KIT_ROOT / "solutions",
                                                 workspace.KIT_ROOT / "README.md") if p.exists()]
        libc = ctypes.CDLL(None, use_errno=True)
        libc.mmap.restype = ctypes.c_void_p
        libc.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_long]
        fd = os.open(grounds["ws"] / "home/scratch", os.O_RDWR)
        os.write(fd, b"\0" * 4096)
        mapped = libc.mmap(None, 4096, 4, 2, fd, 0)  # PROT_EXEC, MAP_PRIVATE: how a library is loaded
        outcome["exec map of a written file"] = "refused" if mapped in (None, ctypes.c_void_p(-1).value) else "mapped"
        return outcome

    outcome = in_child(look)
    assert "ok" in outcome, outcome
    seen = outcome["ok"]
    assert_confined({k: v for k, v in seen.items() if not k.startswith("write site")}, grounds["ws"],
                    grounds["classmate"])
    assert seen["write site-packages (os)"].startswith("refused") and not seen["kit there"]
    assert "home" not in seen["listing of /"] and "srv" not in seen["listing of /"], seen["listing of /"]
    assert seen["exec map of a written file"] == "refused"


def test_both_layers_together(grounds):
    needs(world.landlock_abi() > 0 and workspace.is_root() and workspace.children_own_root(),
          "needs Landlock, root and mount namespaces")
    outcome = in_child(lambda: (enclose(grounds["ws"], {"root", "landlock"}),
                                attempts(grounds["ws"], grounds["classmate"]))[1])
    assert "ok" in outcome, outcome
    assert_confined(outcome["ok"], grounds["ws"], grounds["classmate"])


def test_both_layers_and_the_filter_together(grounds):
    """The filter changes nothing of the world: the child still reaches its own files, and nothing else."""
    needs(world.landlock_abi() > 0 and workspace.is_root() and workspace.children_own_root(),
          "needs Landlock, root and mount namespaces")
    needs_filter()
    outcome = in_child(lambda: (enclose(grounds["ws"], {"root", "landlock", "seccomp"}),
                                attempts(grounds["ws"], grounds["classmate"]))[1])
    assert "ok" in outcome, outcome
    assert_confined(outcome["ok"], grounds["ws"], grounds["classmate"])


def test_where_cuda_runs_the_child_may_name_its_own_threads_and_nothing_more(grounds):
    """CUDA's driver reads /proc/sys/vm/mmap_min_addr and writes /proc/self/task/<id>/comm at its
    start, and fails without them ("OS call failed", error 304; found on an H200): a child that runs
    CUDA may read the one and write its own /proc folder, under its own root and Landlock alike; no
    other kernel view becomes writable, and a child without CUDA writes none."""
    needs(world.landlock_abi() > 0 and workspace.is_root() and workspace.children_own_root(),
          "needs Landlock, root and mount namespaces")
    ws = grounds["ws"]

    def name_a_thread(cuda):
        assert confine.namespaces()["mounts"]
        assert world.own_proc()
        allowed = World.of_child(workspace.site_paths(), ws / "submission", ws / "home", ws / "out",
                                 [str(p) for p in workspace.secrets()], cuda=cuda)
        world.own_root(allowed, ws / "control" / "stash")
        world.landlock(allowed)
        waiting = threading.Event()
        thread = threading.Thread(target=waiting.wait)
        thread.start()
        outcome = {"written": allowed.views_written,
                   "name a thread (libc)": native_open(f"/proc/self/task/{thread.native_id}/comm",
                                                       os.O_WRONLY | os.O_TRUNC),
                   "write cpuinfo (libc)": native_open("/proc/cpuinfo", os.O_WRONLY),
                   "write /sys (libc)": native_open("/sys/kernel/mm/transparent_hugepage/enabled", os.O_WRONLY),
                   "read mmap_min_addr": native_open("/proc/sys/vm/mmap_min_addr", os.O_RDONLY)}
        waiting.set()
        thread.join()
        return outcome

    cuda, cpu = in_child(name_a_thread, True), in_child(name_a_thread, False)
    assert "ok" in cuda and "ok" in cpu, (cuda, cpu)
    cuda, cpu = cuda["ok"], cpu["ok"]
    assert len(cuda["written"]) == 1 and cpu["written"] == [], (cuda, cpu)
    assert cuda["name a thread (libc)"] == "opened" and cuda["read mmap_min_addr"] == "opened", cuda
    assert cpu["name a thread (libc)"].startswith("refused") and cpu["read mmap_min_addr"].startswith("refused"), cpu
    for seen in (cuda, cpu):
        assert seen["write cpuinfo (libc)"].startswith("refused") and not seen["write /sys (libc)"] == "opened", seen


def test_an_asynchronous_cuda_error_ends_the_child_in_the_task_that_caused_it():
    """A device-side assertion (an index out of range on CUDA) is reported at the next synchronisation
    and poisons every later CUDA call: the child synchronises after each CUDA task and ends there, with
    the error's first line last on stderr, so the grader charges that task (as the CPU's IndexError
    would be) and runs the rest in a fresh child. Without an error it goes on."""
    from autograder.sandbox import child

    def synchronise_then(error):
        read, write = os.pipe()
        pid = os.fork()
        if pid == 0:
            try:
                sys.stderr = open(write, "w", closefd=False)  # the child's stderr is the grader's file
                import torch

                def synchronize():
                    if error:
                        raise RuntimeError(error)
                torch.cuda.synchronize = synchronize
                child._surface_cuda_errors()
            finally:
                os._exit(0)
        os.close(write)
        with os.fdopen(read, "rb") as f:
            said = f.read().decode()
        return os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]), said

    code, said = synchronise_then("CUDA error: device-side assert triggered\n"
                                  "CUDA kernel errors might be reported later")
    assert code == 1 and said.strip().splitlines()[-1] == \
        "CUDA error: device-side assert triggered (in this check's CUDA kernels)", said
    assert synchronise_then(None) == (0, "")


def test_the_world_leaves_out_the_kit_even_inside_the_runtime(tmp_path):
    """A kit installed into site-packages (pip install, not -e): the world keeps the rest of
    site-packages and leaves the kit's folder out."""
    site = tmp_path / "site-packages"
    for name in ("torch", "numpy", "autograder/grading/golden", "attention_lab-0.1.dist-info"):
        (site / name).mkdir(parents=True)
    kept = world.around([str(site)], [str(site / "autograder")])
    assert sorted(Path(p).name for p in kept) == ["attention_lab-0.1.dist-info", "numpy", "torch"]
    assert world.around([str(site)], [str(tmp_path)]) == []


def test_the_reference_and_the_stubs_with_and_without_the_kernels_layers(root, monkeypatch, capsys):
    """Full marks and 0 under every combination of layers (as an ordinary user would grade, where
    no layer needs root): each check states the isolation it ran under, the report names every layer
    taken away as missing, and each grading that went without one says so once on stderr."""
    from autograder.grading import grade as grading

    monkeypatch.setattr(workspace, "is_root", lambda: False)
    monkeypatch.setattr(grading, "_warned", set())  # said once a process: earlier tests may have said it
    full, every = CourseConfig().max_points(), protocol.KERNEL_LAYERS
    for layers, files in ((("namespaces", "landlock", "seccomp"), "kernel"), (("landlock", "seccomp"), "kernel"),
                          (("landlock",), "kernel"), ((), "python")):
        if "landlock" in layers:
            needs(world.landlock_abi() > 0, "this kernel has no Landlock")
        monkeypatch.setattr(protocol, "KERNEL_LAYERS", layers)
        reference, stubs = grade(root / "solutions"), grade(root / "assignments")
        assert sum(r.points for r in reference.results) == full, layers
        assert sum(r.points for r in stubs.results) == 0, layers
        taken = [layer for layer in every if layer not in layers]
        for graded in (reference, stubs):
            assert graded.isolation["files"] == files, (layers, graded.isolation)
            assert {t["extra_data"]["isolation"] for t in graded.gradescope()["tests"]} == {files}
            missing = list(graded.isolation["missing"])
            assert missing == taken if REQUIRED else set(taken) <= set(missing), (layers, missing)
        said = capsys.readouterr().err
        assert f"warning: graded without {taken[0]} (" in said and said.count("warning: graded without") == 1, said
    assert "files held by no kernel layer (blocked in Python only" in said


SAYS_ITS_PIDS = """

def context_vector(inputs, weights):
    import os, threading
    task = os.path.exists(f"/proc/self/task/{threading.get_native_id()}")
    with open("/proc/self/status") as f:
        nspid = next(line.split()[1:] for line in f if line.startswith("NSpid:"))
    raise RuntimeError(f"pids seen: own {os.getpid()}, parent {os.getppid()}; own thread in /proc {task}; "
                       f"pids in /proc's namespace {len(nspid)}")
"""


@pytest.mark.parametrize("as_root", [True, False], ids=["as root", "as an ordinary user"])
def test_the_child_is_in_a_pid_namespace_where_the_grader_has_no_pid(root, tmp_path, monkeypatch, as_root):
    """The fork server forks every child into a PID namespace of its own: the child's parent (the
    server) has no pid there, so it has nothing to aim a signal, prlimit or ptrace at; taken away (no
    namespaces, as an ordinary user: as root the grading user could not reach this Python then), the
    child sees the server's pid. Its /proc is the namespace's own (one pid in NSpid, its threads under
    the ids it knows them by: CUDA's driver names its threads through /proc/self/task/<id>)."""
    needs(linux.libc.unshare is not None and os.path.exists("/proc/self/ns/pid"), "no PID namespaces here")
    sub = tmp_path / "pids"
    shutil.copytree(root / "solutions" / "attention_lab", sub / "attention_lab")
    simple = sub / "attention_lab" / "simple.py"
    simple.write_text(simple.read_text() + SAYS_ITS_PIDS)
    if not as_root:
        monkeypatch.setattr(workspace, "is_root", lambda: False)
    seen = {}
    without = tuple(x for x in protocol.KERNEL_LAYERS if x != "namespaces")
    for layers in (protocol.KERNEL_LAYERS,) + ((without,) if not as_root else ()):
        monkeypatch.setattr(protocol, "KERNEL_LAYERS", layers)
        graded = grade(sub, stages={1})
        said = next(r.feedback for r in graded.results if r.id == "s1.context_vector")
        own, parent, task, depth = re.search(r"pids seen: own (\d+), parent (\d+); own thread in /proc (\w+); "
                                             r"pids in /proc's namespace (\d+)", said).groups()
        seen["namespaces" in layers] = int(own), int(parent), graded.isolation["processes"], task, int(depth)
    own, parent, processes, task, depth = seen[True]
    needs("its own PID namespace" in processes, f"the kernel refused a PID namespace here: {processes}")
    assert parent == 0 and own > 1, seen  # the namespace's init is pid 1, the server's, never the child
    assert task == "True" and depth == 1, seen  # /proc mounted for the namespace, not the grader's
    if not as_root:
        assert seen[False][1] > 1 and "no PID namespace" in seen[False][2], seen


def test_the_pid_namespaces_init_catches_no_signal_and_its_end_costs_no_later_grading(root):
    """The init catches no signal (the kernel then drops every signal sent to it from inside: a child
    cannot end it, by kill or by a descriptor's F_SETSIG); and where it ends anyway (here: SIGKILL from
    outside), the server says so and the grader starts another, so the next grading still grades."""
    from autograder.sandbox.forkserver import ForkServer

    with ForkServer() as server:
        server.boot()._ensure_running()
        needs(server.init is not None, "the kernel refused the fork server a PID namespace here")
        with open(f"/proc/{server.init}/status") as f:
            status = dict(line.split(":\t", 1) for line in f.read().splitlines() if ":\t" in line)
        assert int(status["SigCgt"], 16) == 0, status["SigCgt"]
        first = server.proc.pid
        os.kill(server.init, signal.SIGKILL)
        while (linux.proc_stat(server.init) or [b"Z"])[0] != b"Z":  # the signal lands asynchronously
            time.sleep(0.01)
        graded = grade(root / "solutions", stages={1}, server=server)
        assert all(r.passed for r in graded.results) and server.proc.pid != first


LEFT_CHILDREN = """
import json, os, sys
from autograder.grading.grade import grade
from autograder.sandbox import linux
if sys.argv[1] == "unreaped":
    linux.reap_orphan = lambda pid, timeout_s: None
graded = grade(sys.argv[2], stages={1})
assert all(r.passed for r in graded.results)
print(json.dumps(open(f"/proc/{os.getpid()}/task/{os.getpid()}/children").read().split()))
"""


def test_a_grading_leaves_the_grading_process_no_child_not_even_its_namespaces_init(root):
    """The grading process is a subreaper, so the PID namespace's init, which ends with the fork server,
    is handed to it: reaped, not left a zombie child for as long as it lives (a Jupyter kernel that
    graded a notebook spent 2.5 s of its shutdown trying to end it). Unreaped, the zombie is there."""
    def children(how):
        done = subprocess.run([sys.executable, "-c", LEFT_CHILDREN, how, str(root / "solutions")],
                              capture_output=True, text=True, cwd=root, timeout=300)
        assert done.returncode == 0, done.stderr[-3000:]
        return json.loads(done.stdout.strip().splitlines()[-1])

    assert children("reaped") == []
    needs(protocol.KERNEL_LAYERS and "namespaces" in protocol.KERNEL_LAYERS, "no PID namespace to leave an init")
    assert len(children("unreaped")) == 1


def test_require_isolation_stops_before_grading(root, monkeypatch, tmp_path):
    """--require-isolation (or the course's require_isolation = true) stops with exit 1 and a
    sentence, and writes nothing, where the kernel cannot confine graded code."""
    from autograder.cli import main

    monkeypatch.setattr(workspace, "is_root", lambda: False)
    monkeypatch.setattr(protocol, "KERNEL_LAYERS", ())
    out = tmp_path / "results.json"
    assert main(["grade", str(root / "solutions"), "--require-isolation", "--json", str(out)]) == 1
    assert not out.exists()
    config = tmp_path / "attention-lab.toml"
    config.write_text("require_isolation = true\n")
    assert main(["grade", str(root / "solutions"), "--config", str(config), "--stage", "1"]) == 1
    with pytest.raises(runner.IsolationRequired, match="requires isolation enforced by the kernel"):
        grade(root / "solutions", stages={1}, config=CourseConfig(require_isolation=True))


def test_require_isolation_grades_where_the_kernel_confines(root, monkeypatch):
    needs(runner.kernel_isolation() is None, "this machine gives graded code no kernel isolation")
    graded = grade(root / "solutions", stages={1}, config=CourseConfig(require_isolation=True))
    assert all(r.passed for r in graded.results) and graded.isolation["files"] == "kernel"


def test_require_isolation_refuses_a_resource_no_kernel_layer_holds_not_a_layer_missing(root, monkeypatch):
    """--require-isolation keeps its meaning (docs/instructors/course-configuration.md: stop where the
    kernel cannot confine graded code): without the syscall filter the namespaces still hold the network,
    the processes and IPC, so it grades, and the report names the filter missing; without the namespaces
    too, nothing of the kernel's holds the network, and it stops, naming it."""
    needs(runner.kernel_isolation() is None, "this machine gives graded code no kernel isolation")
    monkeypatch.setattr(workspace, "is_root", lambda: False)  # as root, another user would hold the processes
    required = CourseConfig(require_isolation=True)
    monkeypatch.setattr(protocol, "KERNEL_LAYERS", tuple(x for x in protocol.KERNEL_LAYERS if x != "seccomp"))
    graded = grade(root / "solutions", stages={1}, config=required)
    assert all(r.passed for r in graded.results)
    assert graded.isolation["not_kernel"] == [] and list(graded.isolation["missing"]) == ["seccomp"], graded.isolation
    monkeypatch.setattr(protocol, "KERNEL_LAYERS", ("landlock", "cgroup"))
    with pytest.raises(runner.IsolationRequired, match="a grading child's network got blocked in Python only"):
        grade(root / "solutions", stages={1}, config=required)


def test_grade_prints_one_loud_line_naming_a_missing_layer_and_the_whole_list_under_verbose(root, monkeypatch,
                                                                                             capsys):
    from autograder.cli import main

    monkeypatch.setattr(protocol, "KERNEL_LAYERS", tuple(x for x in protocol.KERNEL_LAYERS if x != "seccomp"))
    for verbose in ([], ["--verbose"]):
        assert main(["grade", str(root / "solutions"), "--stage", "1", *verbose]) == 0
        (line,) = [line for line in capsys.readouterr().err.splitlines() if line.startswith("isolation:")]
        if verbose:
            assert "; network: none (its own network namespace); " in line, line
            assert line.endswith("[MISSING: graded without seccomp (seccomp not tried): network, processes, memory "
                                 "and ipc held by fewer layers than the kit has]"), line
        else:
            assert line == ("isolation: WARNING: graded without seccomp (seccomp not tried): network, processes, "
                            "memory and ipc held by fewer layers than the kit has (--verbose: what held each "
                            "resource)"), line


def layers_held(**taken):
    """What ``runner._layers`` makes of a child's report in which every layer of the kit held, but those
    ``taken`` (report fields, each with the value it has where the layer is missing), graded as root."""
    from types import SimpleNamespace

    report = protocol.IsolationReport(user=65500, network=True, mounts=True, ipc=True, pids=True, keyring=True,
                                      root=True, home="tmpfs", landlock=7, seccomp=True, cgroup=True, output="tmpfs")
    ws = SimpleNamespace(uid=65500, disk=workspace.TMPFS, disk_limits="256 MiB", disk_why=None)
    return runner._layers(dataclasses.replace(report, **taken), ws, runner.TASK_TIMEOUT_S)


# Each of the kit's kernel layers taken away: the report's fields then, and the resources it holds.
TAKEN = {
    "namespaces": ({"network": False, "mounts": False, "ipc": False, "pids": False, "root": False,
                    "root_why": "no mount namespace", "home": ""}, ["files", "network", "processes", "ipc"]),
    "landlock": ({"landlock": 0, "landlock_why": "Landlock not tried"}, ["files", "processes"]),
    "seccomp": ({"seccomp": False, "seccomp_why": "the pyseccomp package is not installed"},
                ["network", "processes", "memory", "ipc"]),
    "cgroup": ({"cgroup": False, "cgroup_why": "cannot write /sys/fs/cgroup"}, ["processes", "memory"]),
}


def test_every_layer_of_the_kit_holds_and_the_isolation_line_says_so_in_one_short_line():
    isolation = layers_held()
    assert (isolation["not_kernel"], isolation["missing"], isolation["lost"]) == ([], {}, {})
    assert runner.shortfall(isolation) is None
    assert runner.isolation_line(isolation) == (
        f"isolation: every resource held by every layer the kit has ({', '.join(protocol.KERNEL_LAYERS)}), "
        "as uid 65500 (unprivileged) (--verbose: what held each)")
    verbose = runner.isolation_line(isolation, verbose=True)
    assert all(f"{name}: " in verbose for name in runner.RESOURCES) and "ipc: its own IPC namespace" in verbose
    assert verbose.endswith("[every resource held by every layer the kit has]")


@pytest.mark.parametrize("layer", TAKEN)
def test_a_layer_missing_is_named_with_every_resource_it_held_even_where_another_layer_holds_them(layer):
    """Without the syscall filter, the namespaces still hold the network, the processes and IPC, and the
    cgroup the memory: nothing is left to Python, and yet the filter is missing, and said to be, loudly,
    wherever the grading is reported."""
    fields, holds = TAKEN[layer]
    isolation = layers_held(**fields)
    assert list(isolation["missing"]) == [layer] and {r for r in isolation["lost"]} == set(holds), isolation
    assert all(isolation["lost"][r] == [layer] for r in holds)
    assert isolation["not_kernel"] == []  # another layer holds every resource
    said = runner.shortfall(isolation)
    assert said.startswith(f"graded without {layer} (") and said.endswith(
        f"{runner._listed(holds)} held by fewer layers than the kit has"), said
    assert runner.isolation_line(isolation) == f"isolation: WARNING: {said} (--verbose: what held each resource)"
    assert runner.isolation_line(isolation, verbose=True).endswith(f"[MISSING: {said}]")


def test_without_namespaces_and_the_filter_the_network_is_named_as_held_by_no_kernel_layer():
    isolation = layers_held(**TAKEN["namespaces"][0], **TAKEN["seccomp"][0])
    assert isolation["not_kernel"] == ["network", "ipc"] and list(isolation["missing"]) == ["namespaces", "seccomp"]
    said = runner.shortfall(isolation)
    assert said == ("graded without namespaces (no network, IPC or PID namespace; no root of its own: no mount "
                    "namespace) and seccomp (the pyseccomp package is not installed): files, processes and memory "
                    "held by fewer layers than the kit has; network held by no kernel layer (blocked in Python only "
                    "(no syscall filter: the pyseccomp package is not installed; no network namespace)); ipc held "
                    "by no kernel layer (a fresh session keyring)")


ORDINARY_UID = 65534  # nobody


def test_graded_as_an_ordinary_user(root, tmp_path):
    """The grader itself run by an ordinary user (not root told not to drop): the hostile entries
    that only the kernel stops are contained, and the reference gets full marks.

    Python here may live under /root, and the checkout in a folder of mktemp -d (0700), which an ordinary
    user cannot enter: the test gives the grading process a mount namespace where it can (as a container
    would, ``way_in_for_others``), then drops to nobody."""
    needs(workspace.is_root(), "needs root, to become an ordinary user")
    needs(world.landlock_abi() > 0, "this kernel has no Landlock")
    needs(shutil.which("unshare") and shutil.which("setpriv"), "needs util-linux's unshare and setpriv")
    shared = Path("/tmp") / f"attention-lab-ordinary-{os.getpid()}"
    shared.mkdir(mode=0o755)
    try:
        cases = []
        for stem in ("reads_course_and_classmates", "native_writes_outside", "reads_golden_natively",
                     "module_links_to_root_only_file", "prlimit_from_python", "memfd_from_python"):
            path = next(p for p in HOSTILE if p.stem == stem)
            entry = read_entry(path)
            folder = assemble(path, entry, shared / stem / "sub")
            plant({**entry, "PLANT": {k: v for k, v in entry["PLANT"].items() if not k.startswith("@HOME@")}}, folder)
            cases.append((stem, str(folder)))
        pids = shared / "says_its_pids"  # a /proc of the child's own PID namespace, for an ordinary user too
        shutil.copytree(root / "solutions" / "attention_lab", pids / "attention_lab")
        simple = pids / "attention_lab" / "simple.py"
        simple.write_text(simple.read_text() + SAYS_ITS_PIDS)
        cases.append(("says_its_pids", str(pids)))
        script = shared / "grade.py"
        script.write_text(ORDINARY_SCRIPT)
        for spot in shared.rglob("*"):  # what the ordinary user may read, as on a shared course machine
            if not spot.is_symlink():
                spot.chmod(0o755 if spot.is_dir() else (0o600 if "root-only" in spot.name else 0o644))
        for stem, _ in cases:  # the submission's parent is the grading user's: only the kernel keeps writes out
            os.chown(shared / stem, ORDINARY_UID, ORDINARY_UID)
        (shared / "tmp").mkdir(mode=0o1777)
        (shared / "tmp").chmod(0o1777)
        run = (f"setpriv --reuid {ORDINARY_UID} --regid {ORDINARY_UID} --clear-groups "
               f"--inh-caps=-all {sys.executable} {script} {json.dumps(json.dumps(cases))} {root}")
        # Python, its environment and the kit, laid open in this command's own mount namespace
        needed = [Path(os.path.realpath(p)) for p in (sys.base_prefix, sys.prefix)] + [root / "autograder",
                                                                                       root / "solutions"]
        run = " && ".join([*way_in_for_others(needed, shared / "stash"), f"exec {run}"])
        done = subprocess.run(["unshare", "-m", "--propagation", "private", "sh", "-c", run], cwd=shared,
                              capture_output=True, text=True, timeout=600,
                              env={**os.environ, "HOME": str(shared / "tmp"), "TMPDIR": str(shared / "tmp")})
        assert done.returncode == 0, done.stderr[-3000:]
        report = json.loads(done.stdout.strip().splitlines()[-1])
        assert report["uid"] == ORDINARY_UID
        assert report["reference"] == report["full"], report
        pids = report["cases"].pop("says_its_pids")
        for stem, seen in report["cases"].items():
            assert not seen["leaked"], (stem, seen)
            assert seen["lost"], (stem, seen)
            assert seen["isolation"] == "kernel", (stem, seen)
        written = [p for p in (Path(sysconfig.get_paths()["purelib"]) / "zz-attention-lab-zoo.pth",
                               Path("/tmp/attention-lab-zoo-from-file"),
                               shared / "native_writes_outside" / "planted-by-student") if p.exists()]
        for spot in written:
            spot.unlink()
        assert not written, f"written as an ordinary user: {written}"
        seen = re.search(r"pids seen: own \d+, parent (\d+); own thread in /proc (\w+); "
                         r"pids in /proc's namespace (\d+)", pids["context_vector"])
        assert seen, pids["context_vector"]
        needs("its own PID namespace" in pids["processes"], f"no PID namespace for an ordinary user here: {pids}")
        assert seen.groups() == ("0", "True", "1"), pids  # its /proc the namespace's: CUDA's driver needs it
    finally:
        shutil.rmtree(shared, ignore_errors=True)


def way_in_for_others(needed, stash):
    """Shell commands that, run as root in a mount namespace of its own, let any user reach ``needed``
    where a folder on the way is closed to others (Python under /root; a checkout made by mktemp -d,
    0700): the outermost such folder becomes a world-readable tmpfs holding only bind mounts of its
    children on the way, as a container would lay it out. Nothing outside the namespace changes."""
    children = {}
    for path in needed:
        closed = next((p for p in [*reversed(path.parents), path] if os.stat(p).st_mode & 0o005 != 0o005), None)
        if closed is not None:
            assert closed != path, f"{path} itself is closed to others: nothing inside it could be reached"
            children.setdefault(closed, set()).add(path.relative_to(closed).parts[0])
    commands = []
    for i, (closed, names) in enumerate(sorted(children.items())):
        names = sorted(names)
        spots = [stash / f"{i}-{j}" for j in range(len(names))]
        commands += [f"mkdir -p {spot} && mount --bind {closed / name} {spot}" for spot, name in zip(spots, names)]
        commands.append(f"mount -t tmpfs -o mode=0755 tmpfs {closed}")
        commands += [f"mkdir {closed / name} && mount --move {spot} {closed / name}"
                     for spot, name in zip(spots, names)]
    return commands


ORDINARY_SCRIPT = '''
import json, os, sys
sys.path.insert(0, sys.argv[2])
from autograder.grading.config import CourseConfig
from autograder.grading.grade import grade

cases = json.loads(sys.argv[1])
report = {"uid": os.getuid(), "cases": {}}
for stem, folder in cases:
    graded = grade(folder, stages={1})
    report["cases"][stem] = {
        "leaked": [r.id for r in graded.results if "LEAKED" in r.feedback] + [n for n in graded.notes if "LEAKED" in n],
        "lost": [r.id for r in graded.results if not r.passed],
        "isolation": graded.isolation["files"],
        "context_vector": next(r.feedback for r in graded.results if r.id == "s1.context_vector"),
        "processes": graded.isolation["processes"],
    }
report["reference"] = sum(r.points for r in grade(os.path.join(sys.argv[2], "solutions")).results)
report["full"] = CourseConfig().max_points()
print(json.dumps(report))
'''


def test_a_native_write_changes_no_later_grading(root, tmp_path):
    """The .pth attack, end to end: a wrong stage 1 graded in a fresh interpreter scores the same
    before and after a submission tried to plant a .pth in site-packages (which every later Python
    start would run) from C++; and no later start prints what it planted."""
    needs(runner.kernel_isolation() is None, "this machine gives graded code no kernel isolation")
    wrong = next(p for p in WRONG if p.stem == "normalize_by_max")
    attack = next(p for p in HOSTILE if p.stem == "native_writes_outside")

    def graded(path, name):
        folder = assemble(path, read_entry(path), tmp_path / name / "sub")
        out = tmp_path / f"{name}.json"
        done = subprocess.run([sys.executable, "-m", "autograder.cli", "grade", str(folder), "--stage", "1",
                               "--json", str(out)], cwd=root, capture_output=True, text=True, timeout=300)
        assert done.returncode == 0, done.stderr[-2000:]
        return json.loads(out.read_text())["score"], done.stderr

    before, _ = graded(wrong, "before")
    graded(attack, "attack")
    after, said = graded(wrong, "after")
    assert after == before < CourseConfig().max_points(1)
    assert "LEAKED" not in said
    assert not (Path(sysconfig.get_paths()["purelib"]) / "zz-attention-lab-zoo.pth").exists()


# ---------------------------------------------------------------- the syscall filter (sandbox/syscalls.py)
#
# Each test makes the call as native code would (through libc, where no audit hook looks), once with the
# filter and once without it: refused with it, and, without it, the call goes through (the filter is what
# refused it, and the layer can fail).

KEYCTL_GET_KEYRING_ID, KEY_SPEC_SESSION_KEYRING = 0, -3
SYS_KEYCTL = {"x86_64": 250, "aarch64": 219}.get(platform.machine())
CLONE_THREAD, CLONE_SIGHAND = 0x00010000, 0x00000800
IPC_CREAT, IPC_NOWAIT, IPC_RMID = 0o1000, 0o4000, 0
QUEUE_KEY = 0x41544C54  # the tests' own key (the zoo's entry uses another)


def needs_filter():
    needs(syscalls.unavailable() is None, f"no syscall filter here: {syscalls.unavailable()}")


def filtered():
    """The filter as the child installs it (no_new_privileges first, as an ordinary user's child does)."""
    linux.no_new_privileges()
    syscalls.install()


def outcome_of(result):
    """"ok", or the name of the error libc's last call set."""
    return "ok" if result >= 0 else errno.errorcode.get(ctypes.get_errno(), str(ctypes.get_errno()))


@pytest.fixture
def grader():
    """A process of the tests' own user besides the one that attacks: the fork server or the grader, as
    a child sees them (when an ordinary user grades, they are that user's). Killed afterwards."""
    pid = os.fork()
    if pid == 0:
        try:
            time.sleep(600)
        finally:
            os._exit(0)
    yield pid
    os.kill(pid, signal.SIGKILL)
    os.waitpid(pid, 0)


def raw_calls(grader) -> dict:
    """Every call of ``syscalls.REFUSED``, through libc's syscall(): {name: "ok" or the errno's name}. A
    call that names a process names ``grader`` with arguments that harm nothing; the others get arguments
    the kernel itself rejects (a bad descriptor, a null pointer), with an error of its own, never the
    filter's."""
    import pyseccomp

    libc = ctypes.CDLL(None, use_errno=True)
    own, long = os.getpid(), ctypes.c_long
    cpus = sorted(os.sched_getaffinity(0))
    mask = (ctypes.c_ulong * 16)()
    for cpu in cpus:
        mask[cpu // 64] |= 1 << (cpu % 64)
    param, none, bad = ctypes.c_int(0), None, long(-1)
    absent = b"attention-lab-test-absent"
    args = {
        "prlimit64": (grader, resource.RLIMIT_NPROC, none, none),  # only reads
        "setpriority": (os.PRIO_PROCESS, grader, os.getpriority(os.PRIO_PROCESS, grader)),
        "ioprio_set": (1, grader, 0), "sched_setaffinity": (grader, ctypes.sizeof(mask), mask),
        "sched_setscheduler": (grader, os.SCHED_OTHER, ctypes.byref(param)),
        "sched_setparam": (grader, ctypes.byref(param)), "sched_setattr": (grader, none, 0),
        "migrate_pages": (grader, 0, none, none), "move_pages": (grader, 0, none, none, none, 0),
        "kill": (grader, 0), "tkill": (grader, 0), "tgkill": (grader, grader, 0),
        "fcntl": (bad, syscalls.F_SETOWN, grader), "ioctl": (bad, syscalls.FIOSETOWN, none),
        "rt_sigqueueinfo": (grader, 0, none), "rt_tgsigqueueinfo": (grader, grader, 0, none),
        "ptrace": (12, grader, none, none),  # PTRACE_GETREGS of a process it does not trace
        "process_vm_readv": (grader, none, 0, none, 0, 0), "process_vm_writev": (grader, none, 0, none, 0, 0),
        "process_madvise": (bad, none, 0, 0, 0), "process_mrelease": (bad, 0), "kcmp": (own, grader, 1, 0, 0),
        "pidfd_open": (grader, 0), "pidfd_getfd": (bad, 0, 0), "pidfd_send_signal": (bad, 0, none, 0),
        "unshare": (0x1,),  # a flag unshare does not take (EINVAL)
        "setns": (bad, 0), "mount": (none, none, none, 0, none),
        "umount2": (b"/" + absent, 0), "pivot_root": (none, none), "chroot": (none,),
        "open_tree": (bad, none, 0), "move_mount": (bad, none, bad, none, 0), "fsopen": (none, 0),
        "fsmount": (bad, 0, 0), "fsconfig": (bad, 0, none, none, 0), "fspick": (bad, none, 0),
        "mount_setattr": (bad, none, 0, none, 0), "clone3": (none, 0),
        "keyctl": (KEYCTL_GET_KEYRING_ID, long(KEY_SPEC_SESSION_KEYRING), 0), "add_key": (none, none, none, 0, 0),
        "request_key": (none, none, none, 0), "bpf": (bad, none, 0), "perf_event_open": (none, 0, bad, bad, 0),
        "userfaultfd": (bad,), "io_uring_setup": (0, none), "io_uring_enter": (bad, 0, 0, 0, none, 0),
        "io_uring_register": (bad, 0, none, 0),
        "msgget": (QUEUE_KEY + 1, 0), "msgsnd": (bad, none, 0, 0), "msgrcv": (bad, none, 0, 0, 0),
        "msgctl": (bad, 2, none), "semget": (QUEUE_KEY + 1, 0, 0), "semop": (bad, none, 0),
        "semtimedop": (bad, none, 0, none), "semctl": (bad, 0, 2, 0), "shmget": (QUEUE_KEY + 1, 0, 0),
        "shmat": (bad, none, 0), "shmdt": (none,), "shmctl": (bad, 2, none),
        "mq_open": (absent, 0, 0, none), "mq_unlink": (absent,), "mq_timedsend": (bad, none, 0, 0, none),
        "mq_timedreceive": (bad, none, 0, none, none), "mq_notify": (bad, none), "mq_getsetattr": (bad, none, none),
        "socket": (socket.AF_INET, socket.SOCK_DGRAM, 0),
        "socketpair": (socket.AF_INET, socket.SOCK_STREAM, 0, none),
        "memfd_create": (b"attention-lab-test", 0), "memfd_secret": (0,),
        "execve": (none, none, none), "execveat": (bad, none, none, none, 0),  # a null path: EFAULT, or EBADF
    }
    found = {}
    for name in syscalls.REFUSED:
        number = pyseccomp.resolve_syscall(pyseccomp.Arch.NATIVE, name)
        if number < 0:
            continue  # not a call of this architecture
        if name == "clone":
            # Each namespace flag, with CLONE_THREAD alone, which the kernel rejects (EINVAL); and a process,
            # no CLONE_THREAD, asked with CLONE_SIGHAND but no CLONE_VM, which the kernel rejects too.
            for flag, value in {**syscalls.CLONE_NEW, "process": CLONE_SIGHAND}.items():
                call = [none] * 5
                call[syscalls.CLONE_FLAGS_ARG] = long(value | (CLONE_THREAD if flag != "process" else 0))
                found[f"clone {flag}"] = outcome_of(libc.syscall(number, *call))
            continue
        if name in ("fork", "vfork"):  # no arguments make them fail: where they work, a process starts
            if name == "vfork" and not filtered_here():
                continue  # the copy would run on this process's own stack: only ever tried under the filter
            pid = libc.syscall(number)
            if pid == 0:
                os._exit(0)
            if pid > 0:
                os.waitpid(pid, 0)
            found[name] = outcome_of(pid)
            continue
        found[name] = outcome_of(libc.syscall(number, *args[name]))
    return found


def filtered_here() -> bool:
    """Is this process under a seccomp filter (the Seccomp line of its status: 2)?"""
    with open("/proc/self/status") as f:
        return any(line.split() == ["Seccomp:", "2"] for line in f)


def test_the_filter_refuses_every_call_of_its_table_and_only_the_filter_does(grader):
    needs_filter()
    if platform.machine() == "x86_64":  # a misspelt name would be left out without a word
        import pyseccomp

        unknown = [n for n in syscalls.REFUSED if pyseccomp.resolve_syscall(pyseccomp.Arch.NATIVE, n) < 0]
        assert not unknown, f"libseccomp does not know {unknown} on x86_64"
    refused = in_child(lambda: (filtered(), raw_calls(grader))[1])
    reached = in_child(raw_calls, grader)
    assert "ok" in refused and "ok" in reached, (refused, reached)
    expected = {name: errno.errorcode[syscalls.REFUSED[name.split()[0]][0]] for name in refused["ok"]}
    assert refused["ok"] == expected
    assert set(reached["ok"]) == set(expected) - {"vfork"}
    assert reached["ok"]["fork"] == "ok"  # a process started: the filter is what refuses it
    same = {name: got for name, got in reached["ok"].items() if got == expected[name]}
    # As another user than root, the kernel itself refuses some of them for want of a privilege (EPERM).
    assert not same or not workspace.is_root(), f"these fail as they do without the filter, which shows nothing: {same}"


def own_calls() -> dict:
    """What the child, torch and Python do to themselves, which the filter must let through."""
    libc = ctypes.CDLL(None, use_errno=True)
    own, done = os.getpid(), {}
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))  # prlimit64 on pid 0
    done["rlimit"] = resource.prlimit(0, resource.RLIMIT_NOFILE) == (soft, hard)
    os.setpriority(os.PRIO_PROCESS, 0, os.getpriority(os.PRIO_PROCESS, 0) + 1)  # nicer: allowed to anyone
    os.sched_setaffinity(0, os.sched_getaffinity(0))
    done["kill itself"] = [outcome_of(libc.kill(pid, 0)) for pid in (0, own)]
    got = []
    signal.signal(signal.SIGUSR1, lambda *_: got.append(True))
    signal.raise_signal(signal.SIGUSR1)  # tgkill of its own thread
    done["raise"] = got == [True]
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM):
        a, b = socket.socketpair()
        import fcntl

        done["fcntl"] = fcntl.fcntl(a.fileno(), fcntl.F_GETFL) >= 0  # its own descriptors' other commands
        a.close(), b.close()
    ran = []
    thread = threading.Thread(target=lambda: ran.append(True))  # clone3 refused: glibc falls back to clone
    thread.start(), thread.join()
    done["thread"] = ran == [True]
    return done


def start_processes(run_a_program: bool) -> dict:
    """Start processes as Python and libc do, with no audit hook in the way: {how: "ok" or the errno's name}.
    ``run_a_program``: also replace this process by another program (only where that is refused)."""
    done = {}
    pid = ctypes.CDLL(None, use_errno=True).fork()
    if pid == 0:
        os._exit(0)
    done["fork"] = outcome_of(pid)
    try:
        os.waitpid(os.posix_spawn("/bin/true", ["true"], {}), 0)
        done["posix_spawn"] = "ok"
    except OSError as exc:
        done["posix_spawn"] = errno.errorcode.get(exc.errno or 0, str(exc))
    if pid > 0:
        os.waitpid(pid, 0)
    if run_a_program:
        try:
            os.execv("/bin/true", ["true"])
        except OSError as exc:
            done["execv"] = errno.errorcode.get(exc.errno or 0, str(exc))
    return done


# torch in a fresh process that installs the filter first, as the child does, then runs torch with threads
# of OpenMP's own (a forked copy of the tests' process could wait forever for OpenMP's threads of the
# process it was forked from).
TORCH_WITH_THREADS = """
import sys
sys.path.insert(0, sys.argv[1])
from autograder.sandbox import linux, syscalls
linux.no_new_privileges()
syscalls.install()
import torch
torch.set_num_threads(2)
x = torch.randn(512, 512)
print(bool(torch.allclose((x @ x) @ torch.eye(512), x @ x, atol=1e-4)) and torch.get_num_threads())
"""


def test_the_filter_lets_the_child_act_on_itself_and_start_threads_but_no_process(root):
    needs_filter()
    outcome = in_child(lambda: (filtered(), own_calls())[1])
    assert outcome == {"ok": {"rlimit": True, "kill itself": ["ok", "ok"], "raise": True, "fcntl": True,
                              "thread": True}}, outcome
    torch_ran = subprocess.run([sys.executable, "-c", TORCH_WITH_THREADS, str(root)], capture_output=True, text=True,
                               timeout=120)
    assert torch_ran.stdout.strip() == "2", torch_ran.stderr[-2000:]
    assert in_child(lambda: (filtered(), start_processes(run_a_program=True))[1]) == {
        "ok": {"fork": "EPERM", "posix_spawn": "EPERM", "execv": "EPERM"}}
    # Without the filter, each starts a process: the filter is what refuses them.
    assert in_child(start_processes, False) == {"ok": {"fork": "ok", "posix_spawn": "ok"}}


def test_the_child_cannot_lower_renice_or_repin_the_grader(grader):
    """prlimit, setpriority and sched_setaffinity on the fork server (the grader's own user's process
    when an ordinary user grades): refused with the filter; without it, each changes that process."""
    needs_filter()
    cpus = sorted(os.sched_getaffinity(grader))
    before = (resource.prlimit(grader, resource.RLIMIT_NPROC), resource.prlimit(grader, resource.RLIMIT_AS),
              os.getpriority(os.PRIO_PROCESS, grader), os.sched_getaffinity(grader))

    def attack():
        libc = ctypes.CDLL(None, use_errno=True)
        tried = {}
        for name, which, value in (("nproc", resource.RLIMIT_NPROC, 0), ("as", resource.RLIMIT_AS, 64 * 2**20)):
            limit = (ctypes.c_uint64 * 2)(value, value)
            tried[f"prlimit {name}"] = outcome_of(libc.prlimit(grader, which, limit, None))
        tried["setpriority"] = outcome_of(libc.setpriority(os.PRIO_PROCESS, grader, 19))
        mask = (ctypes.c_ulong * 16)(1 << cpus[0])
        tried["sched_setaffinity"] = outcome_of(libc.sched_setaffinity(grader, ctypes.sizeof(mask), mask))
        return tried

    refused = in_child(lambda: (filtered(), attack())[1])
    assert refused == {"ok": dict.fromkeys(("prlimit nproc", "prlimit as", "setpriority", "sched_setaffinity"),
                                           "EPERM")}, refused
    # Every process of the user at once (PRIO_USER): refused too, and never tried without the filter.
    assert in_child(lambda: (filtered(), outcome_of(ctypes.CDLL(None, use_errno=True).setpriority(2, 0, 0)))[1]) \
        == {"ok": "EPERM"}
    assert (resource.prlimit(grader, resource.RLIMIT_NPROC), resource.prlimit(grader, resource.RLIMIT_AS),
            os.getpriority(os.PRIO_PROCESS, grader), os.sched_getaffinity(grader)) == before
    reached = in_child(attack)
    assert set(reached["ok"].values()) == {"ok"}, reached
    assert resource.prlimit(grader, resource.RLIMIT_NPROC) == (0, 0)
    assert resource.prlimit(grader, resource.RLIMIT_AS) == (64 * 2**20, 64 * 2**20)
    assert os.getpriority(os.PRIO_PROCESS, grader) == 19
    assert len(cpus) == 1 or os.sched_getaffinity(grader) == {cpus[0]}


def test_a_sysv_queue_left_by_an_earlier_grading_is_out_of_reach():
    """A queue with a key every grading knows, holding a message: read without any layer; not there in
    an IPC namespace of its own; refused by the filter (where the kernel gives no namespace)."""
    needs_filter()
    libc = ctypes.CDLL(None, use_errno=True)

    class Message(ctypes.Structure):
        _fields_ = [("mtype", ctypes.c_long), ("mtext", ctypes.c_char * 32)]

    def read():
        queue = libc.msgget(QUEUE_KEY, 0)
        if queue < 0:
            return outcome_of(queue)
        got = Message()
        return got.mtext.decode() if libc.msgrcv(queue, ctypes.byref(got), 32, 0, IPC_NOWAIT) >= 0 else "empty"

    queue = libc.msgget(QUEUE_KEY, IPC_CREAT | 0o600)
    assert queue >= 0, os.strerror(ctypes.get_errno())
    try:
        for _ in range(2):
            assert libc.msgsnd(queue, ctypes.byref(Message(1, b"LEAKED from an earlier one")), 32, IPC_NOWAIT) == 0
        assert in_child(lambda: (filtered(), read())[1]) == {"ok": "EPERM"}
        own = in_child(lambda: (confine.namespaces()["ipc"], read()))["ok"]
        assert own == [True, "ENOENT"] or not own[0], own  # where the kernel gives it an IPC namespace
        assert in_child(read) == {"ok": "LEAKED from an earlier one"}  # the layers can fail
    finally:
        libc.msgctl(queue, IPC_RMID, None)


def test_the_child_leaves_the_graders_session_keyring():
    """Without a keyring of its own the child holds the grader's session keyring (or, where the grader has
    none, the user's, which every process of that user shares); it joins a new one; the filter then
    refuses every keyring call."""
    needs(SYS_KEYCTL is not None, f"keyctl's number is not known on {platform.machine()}")
    needs_filter()

    def session():
        libc = ctypes.CDLL(None, use_errno=True)
        found = libc.syscall(SYS_KEYCTL, KEYCTL_GET_KEYRING_ID, ctypes.c_long(KEY_SPEC_SESSION_KEYRING), 0)
        return found if found >= 0 else outcome_of(found)

    graders = session()
    assert isinstance(graders, int), graders
    assert in_child(session) == {"ok": graders}  # the layer can fail
    joined = in_child(lambda: (confine.new_session_keyring(), session()))["ok"]
    assert joined[0] is True and isinstance(joined[1], int) and joined[1] != graders
    assert in_child(lambda: (confine.new_session_keyring(), filtered(), session())[2]) == {"ok": "EPERM"}


def test_udp_to_the_loopback_where_the_kernel_gives_no_network_namespace(grounds):
    """Landlock alone (a container that forbids unshare): a datagram to 127.0.0.1 is refused by the
    filter; without it the datagram arrives (Landlock governs UDP only from ABI 10)."""
    needs_filter()
    abi = world.landlock_abi()
    receiver = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    receiver.bind(("127.0.0.1", 0))
    port = receiver.getsockname()[1]

    def send(layers):
        enclose(grounds["ws"], layers)
        libc = ctypes.CDLL(None, use_errno=True)
        fd = libc.socket(socket.AF_INET, socket.SOCK_DGRAM, 0)
        if fd < 0:
            return outcome_of(fd)
        address = struct.pack("=H", socket.AF_INET) + struct.pack("!H", port) + socket.inet_aton("127.0.0.1")
        address += bytes(8)  # sockaddr_in
        return outcome_of(libc.sendto(fd, b"LEAKED", 6, 0, address, len(address)))

    def arrived():
        return select.select([receiver], [], [], 0.5)[0] and receiver.recv(64)

    with receiver:
        assert in_child(send, {"landlock", "seccomp"} if abi else {"seccomp"}) == {"ok": "EAFNOSUPPORT"}
        assert not arrived()
        assert in_child(send, {"landlock"} if 0 < abi < 10 else set()) == {"ok": "ok"}  # the filter can fail
        assert arrived() == b"LEAKED"


def test_memory_in_a_memfd_is_refused():
    """64 MiB held in a memfd, which RLIMIT_AS does not count: refused with the filter, held without it."""
    needs_filter()

    def hold():
        libc = ctypes.CDLL(None, use_errno=True)
        fd = libc.memfd_create(b"attention-lab-test", 0)
        if fd < 0:
            return outcome_of(fd)
        return outcome_of(libc.fallocate(fd, 0, ctypes.c_long(0), ctypes.c_long(64 * 2**20)))

    assert in_child(lambda: (filtered(), hold())[1]) == {"ok": "EPERM"}
    assert in_child(hold) == {"ok": "ok"}


def test_bindings_that_graded_code_cannot_import_are_named_once(tmp_path, monkeypatch, capsys):
    """A kernel layer's bindings installed on PYTHONPATH (pip --target) are found by the grader and not by
    graded code, whose import path is Python's own environment: the child would run without the layer,
    and its isolation line alone would say so. The grader names them, once; installed beside Python, none."""
    fake = tmp_path / "elsewhere" / "fake_binding"  # a name no environment has
    fake.mkdir(parents=True)
    (fake / "__init__.py").write_text("")
    code = ("from autograder.sandbox.workspace import bindings_out_of_reach as b; "
            "print(sorted(b(('fake_binding', 'json'))))")  # json: the standard library's, within reach

    def found(*pythonpath):
        env = {**os.environ, "PYTHONPATH": os.pathsep.join(map(str, pythonpath))}
        done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, cwd=tmp_path)
        assert done.returncode == 0, done.stderr
        return done.stdout.strip()

    kit = Path(__file__).resolve().parents[1]
    assert found(tmp_path / "elsewhere", kit) == "['fake_binding']"
    assert found(kit) == "[]"
    from autograder.grading import grade as grading

    monkeypatch.setattr(grading, "bindings_out_of_reach", lambda: {"landlockpy": str(fake)})
    monkeypatch.setattr(grading, "_warned", set())
    grading._warn_once({"files": "kernel"})
    grading._warn_once({"files": "kernel"})
    said = capsys.readouterr().err
    assert said.count("warning: landlockpy is installed in") == 1 and "its layer is missing in the child" in said


def test_the_childs_report_reads_a_field_of_the_wrong_type_or_missing_as_the_layer_missing():
    """``protocol.IsolationReport``: what a child wrote, read back; anything but the field's own type (a
    ``true`` where Landlock's ABI goes, a string where a flag goes), and anything that is not an object,
    reads as that layer missing, never as one that held. A key of no field is refused where it is written."""
    report = protocol.IsolationReport(user=65501, network=True, landlock=6, threads=3, seccomp=True,
                                      cgroup_why=None, home="tmpfs")
    assert protocol.IsolationReport.from_json(report.to_json()) == report
    odd = json.dumps({"landlock": True, "seccomp": "yes", "root": 1, "user": False, "threads": 2.0,
                      "pids": True, "unknown": "ignored"})
    read = protocol.IsolationReport.from_json(odd)
    kept = (read.landlock, read.seccomp, read.root, read.user, read.threads, read.pids)
    assert kept == (0, False, False, None, 1, True)
    for junk in (b"", b"not json", b"[1, 2]", b"null", None):
        assert protocol.IsolationReport.from_json(junk) == protocol.IsolationReport()
    with pytest.raises(TypeError):
        protocol.IsolationReport(**{"landlok": 6})
