"""What one grading can do to another: attacks at run time, each graded by one ``grade-all`` beside
two honest students, as root and as an ordinary user would grade.

The attacker's name sorts first, so it is graded first, by the same worker and fork server as the
honest students after it (``--jobs 1``). The honest students' CSV rows and records (every check's
points and feedback) must be identical to those of a run without the attacker; the attacker's own
code says ``LEAKED`` in its feedback when an attack got through; every run ends within
``test_class_zoo.BOUND_S`` and its peak memory within ``test_class_zoo.PEAK_BYTES``.
"""
from __future__ import annotations

import csv
import io
import json
import shutil
from pathlib import Path

import pytest

from tests.test_class_zoo import BOUND_S, PEAK_BYTES, ROOT, run_grade_all
from tools.zoo import helper

# The end of simple.py: context_vector attacks, then answers right (its own points do not matter).
ATTACKS = {  # name -> (the attack, the layers that alone stop it here: taken away, it works)
    # Lower the fork server's limits: the next student's child could not start (as an ordinary user,
    # the child shares the grader's uid). The syscall filter refuses prlimit64 on any other process, and
    # in the PID namespace the server makes, the server has no pid (getppid() says 0) to aim at.
    "prlimit_of_the_server": (("seccomp", "namespaces"), '''
    import os, resource
    try:
        if os.getppid():
            resource.prlimit(os.getppid(), resource.RLIMIT_NPROC, (1, 1))
            resource.prlimit(os.getppid(), resource.RLIMIT_AS, (2**28, 2**28))
            raise RuntimeError("LEAKED: lowered the fork server's limits")
    except PermissionError:
        pass
'''),
    # Slow the grader down for everyone after: renice it and pin it to one CPU.
    # (Here the kernel refuses these even without the filter; tests/test_isolation.py shows the filter's
    # own refusal, on a process of the same user.)
    "renices_the_server": (None, '''
    import os
    for attack in [] if not os.getppid() else (lambda: os.setpriority(os.PRIO_PROCESS, os.getppid(), 19),
                   lambda: os.sched_setaffinity(os.getppid(), {0})):
        try:
            attack()
        except OSError:
            continue
        raise RuntimeError("LEAKED: changed the fork server's scheduling")
'''),
    # Hold memory where neither RLIMIT_AS nor the watch on one process's resident memory sees it: in
    # memfd files of 16 MiB each (RLIMIT_FSIZE bounds one file).
    "holds_memory_in_memfd": (("seccomp", "cgroup"), '''
    import os
    block, held = b"x" * (16 * 2**20), []
    try:
        for _ in range(64):  # 1 GiB: enough to show it held what it should not, short of harming the machine
            fd = os.memfd_create("held")
            os.write(fd, block)
            held.append(fd)
    except OSError:
        pass
    if len(held) >= 64:
        raise RuntimeError(f"LEAKED: held {len(held) * 16} MiB in memfd files")
'''),
    # A process that outlives its grading: past the audit hook (its table of refused events emptied, reached
    # through the traceback of a refusal it makes quietly), a fork of a daemon that makes itself undumpable
    # (its environment unreadable to the grader, which once found stragglers by it) and leaves for a session
    # of its own, to run beside the next students. The filter refuses a child every process.
    "forks_a_daemon_past_the_audit_hook": (("seccomp", "cgroup"), '''
    import os, time
    _neuter_the_audit_hook()
    pid = -1
    try:
        pid = os.fork()
    except OSError:
        pass
    if pid == 0:
        import ctypes
        ctypes.CDLL(None).prctl(4, 0, 0, 0, 0)  # PR_SET_DUMPABLE 0
        os.setsid()
        time.sleep(120)
        os._exit(0)
    if pid > 0:
        raise RuntimeError(f"LEAKED: a daemon runs beside the class, pid {pid}")
'''),
    # A zero evaded: 24 spinners forked past the audit hook keep the machine busy while the main thread stays
    # runnable, counted in none of its CPU time, so that the grading would end as the grader's failure ("too
    # busy") and the row go ungraded on every run. No process starts, and no thread in a stage written by
    # hand: its own spinning is charged to it, and its row is graded.
    "spins_to_look_starved": (("seccomp", "cgroup"), '''
    import os, threading, time
    _neuter_the_audit_hook()
    forked = 0
    for _ in range(24):
        try:
            if os.fork() == 0:
                while True:
                    pass
            forked += 1
        except OSError:
            try:
                threading.Thread(target=lambda: [0 for _ in iter(int, 1)], daemon=True).start()
            except RuntimeError:  # no thread may start here
                pass
    if forked:
        raise RuntimeError(f"LEAKED: forked {forked} spinners past the audit hook")
    end = time.monotonic() + 11  # past the check's 10 s: it is charged, or, run again alone, slow but done
    while time.monotonic() < end:
        pass
'''),
}


def simple_with(attack: str) -> str:
    reference = (ROOT / "solutions" / "attention_lab" / "simple.py").read_text()
    past_the_hook = helper("neuters_the_audit_hook") if "_neuter_the_audit_hook()" in attack else ""
    return (reference + past_the_hook + "\n\n_right_context_vector = context_vector\n\n\n"
            f"def context_vector(inputs, weights):\n{attack}\n    return _right_context_vector(inputs, weights)\n")


def honest_class(folder: Path) -> Path:
    shutil.copytree(ROOT / "solutions" / "attention_lab", folder / "ann" / "attention_lab")
    shutil.copytree(ROOT / "assignments" / "attention_lab", folder / "bob" / "attention_lab")
    return folder


def graded(folder: Path, out: Path, as_root: bool, without=(), finished=True):
    """(CSV rows, records, stderr) of one grade-all; ``finished``: it must exit 0."""
    code, stderr, seconds, peak = run_grade_all(folder, out, as_root=as_root, without=without)
    assert code == 0 or not finished, stderr[-3000:]
    assert seconds < BOUND_S and peak < PEAK_BYTES, (seconds, peak)
    rows = {r["student"]: r for r in csv.DictReader(io.StringIO(out.read_text()))}
    records = {name: json.loads(path.read_text()) for name in rows
               if (path := out.with_name(out.stem + "-results") / f"{name}.json").exists()}
    return rows, records, stderr


def comparable(record: dict) -> list:
    """What a record says of each check: its points and its feedback (not how long it took)."""
    return [(t["number"], t["score"], t["output"]) for t in record["tests"]]


@pytest.fixture(scope="module", params=[True, False], ids=["as_root", "as_user"])
def baseline(request, tmp_path_factory):
    """The honest class graded alone, once per way of grading."""
    folder = honest_class(tmp_path_factory.mktemp("alone") / "submitted")
    rows, records, _ = graded(folder, folder.parent / "grades.csv", request.param)
    return request.param, rows, records


def with_attacker(folder: Path, attack: str) -> Path:
    shutil.copytree(ROOT / "solutions" / "attention_lab", folder / "aaa" / "attention_lab")
    (folder / "aaa" / "attention_lab" / "simple.py").write_text(simple_with(ATTACKS[attack][1]))
    return folder


@pytest.mark.parametrize("attack", ATTACKS)
def test_an_attack_at_run_time_changes_no_other_grade(attack, baseline, tmp_path):
    as_root, rows_alone, records_alone = baseline
    folder = with_attacker(honest_class(tmp_path / "submitted"), attack)
    rows, records, stderr = graded(folder, tmp_path / "grades.csv", as_root)
    assert "aaa" in records, f"the attacker's row was not graded: {rows.get('aaa')}"
    assert "LEAKED" not in json.dumps(records["aaa"]) and "LEAKED" not in stderr, records["aaa"]["tests"]
    for honest in ("ann", "bob"):
        assert rows[honest] == rows_alone[honest], (honest, rows[honest], rows_alone[honest])
        assert comparable(records[honest]) == comparable(records_alone[honest]), honest


@pytest.mark.parametrize("attack", [name for name, (layers, _) in ATTACKS.items() if layers])
def test_without_its_layers_the_attack_gets_through(attack, tmp_path):
    """The layers that stop it taken away, graded as an ordinary user (who shares the grader's uid,
    and so may reach its processes): each attack above works, which is what those layers are for."""
    folder = with_attacker(honest_class(tmp_path / "submitted"), attack)
    rows, records, _ = graded(folder, tmp_path / "grades.csv", as_root=False, without=ATTACKS[attack][0],
                              finished=False)
    harmed = [name for name in ("ann", "bob") if name not in records]  # "the grader's child process failed to start"
    assert "LEAKED" in json.dumps(records["aaa"]) or harmed, (rows, records["aaa"]["tests"])
