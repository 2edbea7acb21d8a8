"""``grade-all --executor dask://HOST:PORT``: a class graded by the workers of a Dask cluster equals the same
class graded on this machine, and survives what a cluster does: a worker lost mid-class, a submission that
kills every worker that grades it, a worker of another kit, a scheduler lost (the run resumed locally).

The cluster is a LocalCluster of two worker processes (its scheduler in this process), or, where the
scheduler itself must die, a scheduler and a worker started as the command-line tools start them."""
from __future__ import annotations

import csv
import functools
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
import zipfile
from dataclasses import replace
from pathlib import Path

import dask
import pytest
import torch
from distributed import Client

from autograder.delivery.classrun import cluster as cluster_module
from autograder.delivery.classrun.grade_all import PoolLost, grade_all
from autograder.delivery.classrun.worker import Job, grade_job, kit_fingerprint
from autograder.errors import UsageError
from autograder.grading.config import CourseConfig
from autograder.paths import KIT_ROOT
from tests import cluster_jobs
from tools.local_cluster import local_cluster
from tools.zoo import ZOO, assemble, read_entry

STAGES = [1, 3]
ENTRIES = ("wrong/weights_all_softmax_dim0", "wrong/causal_no_scaling", "correct/causal_einsum")
TIMINGS = {"seconds", "execution_time"}  # what differs between two gradings of the same code
# and which grading user a child ran as: the first of the kit's uids free where it ran (``forkserver.SLOTS``)
SLOT = re.compile(r"uid 655\d\d")


@pytest.fixture(scope="module")
def cluster():
    # A worker that dies grading a task twice (here: once more after the first) ends that task as KilledWorker.
    with dask.config.set({"distributed.scheduler.allowed-failures": 1}), local_cluster(2) as (started, _):
        yield started


def address(cluster) -> str:
    return "dask://" + cluster.scheduler_address.removeprefix("tcp://")


@pytest.fixture(scope="module")
def klass(tmp_path_factory):
    """Seven students: the reference, the stubs, three zoo entries, a zip and an empty folder."""
    folder = tmp_path_factory.mktemp("cluster") / "submitted"
    shutil.copytree(KIT_ROOT / "solutions" / "attention_lab", folder / "ann" / "attention_lab")
    shutil.copytree(KIT_ROOT / "assignments" / "attention_lab", folder / "bob" / "attention_lab")
    for name, entry in zip(("cy", "dee", "eve"), ENTRIES):
        path = ZOO / f"{entry}.py"
        assemble(path, read_entry(path), folder / name)
    with zipfile.ZipFile(folder / "hal.zip", "w") as z:
        for path in sorted((KIT_ROOT / "solutions" / "attention_lab").glob("*.py")):
            z.write(path, f"hal/attention_lab/{path.name}")
    (folder / "ivy" / "attention").mkdir(parents=True)  # nothing handed in: intake refuses it
    return folder


@pytest.fixture(scope="module")
def local(klass, tmp_path_factory):
    """The class graded on this machine: what every cluster run must equal."""
    out = tmp_path_factory.mktemp("local") / "grades.csv"
    assert grade_all(klass, out, stages=STAGES, timeout_s=3, log=lambda _: None) == 0
    return out


def graded(klass, out, cluster, **options):
    messages: list[str] = []
    failed = grade_all(klass, out, stages=STAGES, timeout_s=3, log=messages.append, executor=address(cluster),
                       **options)
    return failed, messages


def rows(out: Path) -> dict:
    return {r["student"]: r for r in csv.DictReader(out.open())}


def untimed(data):
    if isinstance(data, dict):
        return {k: untimed(v) for k, v in data.items() if k not in TIMINGS}
    if isinstance(data, list):
        return [untimed(v) for v in data]
    return SLOT.sub("uid (a grading slot)", data) if isinstance(data, str) else data


def records(out: Path) -> dict:
    folder = out.with_name(out.stem + "-results")
    return {p.stem: untimed(json.loads(p.read_text())) for p in sorted(folder.glob("*.json"))}


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return Path(f"/proc/{pid}/stat").read_text().split(")")[-1].split()[0] != "Z"


def test_a_cluster_grades_a_class_as_this_machine_does(cluster, klass, local, tmp_path):
    out = tmp_path / "grades.csv"
    failed, messages = graded(klass, out, cluster)
    assert failed == 0, messages
    assert out.read_text() == local.read_text()
    assert records(out) == records(local) and len(records(out)) == 7
    assert any("with 2 Dask workers (2 threads) of tcp://" in m for m in messages), messages
    summary = out.with_suffix(".txt").read_text()
    assert "graded by, in this run:" in summary and summary.count("tcp://127.0.0.1") == 2, summary


def test_a_worker_killed_mid_class_has_its_student_graded_elsewhere(cluster, klass, local, tmp_path):
    marks = tmp_path / "marks"
    marks.mkdir()
    out = tmp_path / "grades.csv"
    failed, messages = graded(klass, out, cluster, run_job=functools.partial(cluster_jobs.dies_once, str(marks), "cy"))
    assert (marks / "cy.tried").exists()  # the worker did die
    assert failed == 0, messages
    assert out.read_text() == local.read_text() and records(out) == records(local)
    servers = json.loads((marks / "servers.json").read_text())
    assert servers, "the worker that died had no warm fork server to leave behind"
    deadline = time.monotonic() + 15
    while any(alive(pid) for pid in servers) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not [pid for pid in servers if alive(pid)], "a fork server outlived the worker that started it"


def test_a_submission_that_kills_every_worker_is_the_graders_failure(cluster, klass, local, tmp_path):
    out = tmp_path / "grades.csv"
    failed, messages = graded(klass, out, cluster, run_job=functools.partial(cluster_jobs.always_dies, "dee"))
    assert failed == 1
    dee = rows(out)["dee"]
    assert dee["total"] == "" and "not the submission's fault" in dee["problem"] and "died" in dee["problem"], dee
    assert {s: r for s, r in rows(out).items() if s != "dee"} == {s: r for s, r in rows(local).items() if s != "dee"}
    assert "dee" not in records(out)  # left for the next run, which grades it
    again: list[str] = []
    assert grade_all(klass, out, stages=STAGES, timeout_s=3, log=again.append) == 0
    assert any("6 already graded, 1 to grade" in m for m in again), again
    assert out.read_text() == local.read_text()


def test_a_worker_of_another_kit_is_refused_by_name(cluster, klass, local, tmp_path):
    with Client(cluster.scheduler_address, set_as_default=False) as client:
        other = sorted(client.scheduler_info()["workers"])[0]
        client.run(cluster_jobs.another_kit, workers=[other])
        try:
            out = tmp_path / "grades.csv"
            failed, messages = graded(klass, out, cluster)
        finally:
            client.run(cluster_jobs.the_kit_again, workers=[other])
    assert failed == 0
    said = [m for m in messages if m.startswith(f"worker {other}")]
    assert said and "may not grade this class: it runs another version of the kit (0123456789ab" in said[0], messages
    assert out.read_text() == local.read_text()
    summary = out.with_suffix(".txt").read_text()
    assert other not in summary and "6 gradings, every layer the kit has" in summary, summary  # ivy: not graded


@pytest.mark.parametrize("fault, said", [
    (cluster_jobs.unconfined, "may not grade this class: it cannot confine graded code (no Landlock here, as a test "
                              "says); fix the node"),
    (cluster_jobs.no_answer, "may not grade this class: it does not run this kit's worker code (RuntimeError("),
])
def test_a_worker_that_cannot_confine_or_answer_is_refused_by_name(cluster, klass, local, tmp_path, fault, said):
    with Client(cluster.scheduler_address, set_as_default=False) as client:
        other = sorted(client.scheduler_info(n_workers=-1)["workers"])[0]
        client.run(fault, workers=[other])
        try:
            out = tmp_path / "grades.csv"
            failed, messages = graded(klass, out, cluster)
            if fault is cluster_jobs.unconfined:  # the instructor may let it grade: then it does
                allowed = tmp_path / "allowed.csv"
                assert graded(klass, allowed, cluster, unconfined=True)[0] == 0
                assert allowed.read_text() == local.read_text()
                assert allowed.with_suffix(".txt").read_text().count("tcp://127.0.0.1") == 2
        finally:
            client.run(cluster_jobs.restore, workers=[other])
    assert failed == 0 and out.read_text() == local.read_text()
    refused = [m for m in messages if m.startswith(f"worker {other}")]
    assert refused and said in refused[0], messages
    assert other not in out.with_suffix(".txt").read_text()


def test_a_job_reaching_a_worker_of_another_kit_grades_nothing(klass):
    """A worker that joined after the class started is asked again with each job it gets."""
    job = Job("ann", "ann", klass / "ann", {"devices": ["cpu"], "stages": STAGES}, 3, CourseConfig(),
              kit="a kit of another version")
    done = grade_job(job)
    assert done.record is None and done.refused.startswith("it runs another version of the kit"), done
    elsewhere = replace(job, kit=kit_fingerprint(), key={"devices": ["cpu", "tpu"], "stages": STAGES})
    assert grade_job(elsewhere).refused.startswith("it has no tpu")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_a_lost_scheduler_stops_the_run_and_a_local_run_finishes_it(klass, local, tmp_path, monkeypatch):
    port = free_port()
    env = {**os.environ, "PYTHONPATH": str(KIT_ROOT)}
    scheduler = subprocess.Popen([sys.executable, "-m", "distributed.cli.dask_scheduler", "--host", "127.0.0.1",
                                  "--port", str(port), "--no-dashboard"], env=env, stdout=subprocess.DEVNULL,
                                 stderr=subprocess.DEVNULL)
    gpu = ["--resources", "GPU=1"] if torch.cuda.is_available() else []  # graded on a local run's devices
    worker = subprocess.Popen([sys.executable, "-m", "distributed.cli.dask_worker", f"tcp://127.0.0.1:{port}",
                               "--nthreads", "1", "--no-dashboard", *gpu], env=env, stdout=subprocess.DEVNULL,
                              stderr=subprocess.DEVNULL)
    out = tmp_path / "grades.csv"
    results = out.with_name("grades-results")
    try:
        with Client(f"tcp://127.0.0.1:{port}", timeout="60s", set_as_default=False) as client:
            client.wait_for_workers(1, timeout=120)

        def kill_scheduler_after_two():
            while len(list(results.glob("*.json"))) < 2 and scheduler.poll() is None:
                time.sleep(0.05)
            scheduler.send_signal(signal.SIGKILL)

        monkeypatch.setattr(cluster_module, "SCHEDULER_GRACE_S", 3.0)
        threading.Thread(target=kill_scheduler_after_two, daemon=True).start()
        with pytest.raises(PoolLost, match=f"the Dask scheduler at tcp://127.0.0.1:{port} was lost, after [2-6] of 7 "
                                           "were graded; what was graded is saved"):
            grade_all(klass, out, stages=STAGES, timeout_s=3, log=lambda _: None,
                      executor=f"dask://127.0.0.1:{port}")
    finally:
        for proc in (scheduler, worker):
            proc.kill()
            proc.wait()
    saved = {p.name: p.stat().st_mtime_ns for p in results.glob("*.json")}
    assert 2 <= len(saved) < 7, saved
    messages: list[str] = []
    assert grade_all(klass, out, stages=STAGES, timeout_s=3, log=messages.append) == 0
    assert any(f"{len(saved)} already graded, {7 - len(saved)} to grade" in m for m in messages), messages
    assert {p.name: p.stat().st_mtime_ns for p in results.glob("*.json") if p.name in saved} == saved
    assert out.read_text() == local.read_text() and records(out) == records(local)


def test_an_executor_that_is_not_one_is_refused(klass, tmp_path, monkeypatch):
    with pytest.raises(UsageError, match="use local, or dask://HOST:PORT"):
        grade_all(klass, tmp_path / "g.csv", stages=[1], executor="slurm", log=lambda _: None)
    monkeypatch.setattr(cluster_module, "CONNECT_TIMEOUT_S", 2)
    with pytest.raises(UsageError, match="no Dask scheduler answered at tcp://127.0.0.1:"):
        grade_all(klass, tmp_path / "g.csv", stages=[1], executor=f"dask://127.0.0.1:{free_port()}",
                  log=lambda _: None)


def test_a_cluster_with_no_worker_that_may_grade_is_refused_before_anything_is_graded(cluster, klass, tmp_path):
    with Client(cluster.scheduler_address, set_as_default=False) as client:
        client.run(cluster_jobs.another_kit)
        try:
            with pytest.raises(UsageError, match="no worker of the Dask scheduler at tcp://.* may grade this class"):
                graded(klass, tmp_path / "grades.csv", cluster)
        finally:
            client.run(cluster_jobs.the_kit_again)
    assert not list((tmp_path / "grades-results").glob("*.json"))
