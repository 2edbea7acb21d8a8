"""Where a class's gradings run (``grade-all --executor``): grade-all's own threads on this machine, the
default with nothing to install, or the workers of a Dask cluster (``dask://HOST:PORT``: a laptop's
LocalCluster, Slurm or PBS through dask-jobqueue, Kubernetes). Both are ``concurrent.futures`` executors
of ``worker.grade_job``; the driver (``grade_all``) submits, waits and writes, the same way for both.
The cluster's pool is ``cluster.DaskPool``, imported only where one is asked for (Dask is an extra).

A pool says what the driver needs besides: how many jobs it runs at once (``slots``: the driver keeps no
more in flight, so a job starts when it is sent and its time can be told from the driver), which devices
the class is graded on, who may grade it (a cluster's workers are asked at the start: ``worker.facts``),
and whether a failed future is the student's job lost (a worker that died with it) or the pool itself.
"""
from __future__ import annotations

import queue
import threading
from concurrent.futures import Executor, Future

from ...errors import UsageError
from ...grading.grade import available_devices
from .worker import close_warm_server



class LocalPool(Executor):
    """``jobs`` threads of this process, each with its own warm fork server, closed when the thread ends.
    Daemon threads, so that one stuck in a grading the driver gave up on never keeps grade-all from ending
    (it holds only its own fork server, which dies with grade-all)."""

    kind = "local"
    student_faults: tuple = ()  # a local job that fails has failed the grader: ``worker.grade_job`` never raises

    def __init__(self, jobs: int) -> None:
        self.slots = jobs  # the driver may lower it to the students there are: a thread starts with a job
        self.devices = available_devices()
        self._work: queue.Queue = queue.Queue()
        self._threads: list[threading.Thread] = []
        self._stuck = 0  # threads left in a grading given up on, each replaced by a new one

    def submit(self, fn, /, *args, **kwargs) -> Future:
        future: Future = Future()
        self._work.put((future, fn, args, kwargs))
        if len(self._threads) < self.slots + self._stuck:
            self._threads.append(threading.Thread(target=self._serve, daemon=True))
            self._threads[-1].start()
        return future

    def _serve(self) -> None:
        try:
            while (item := self._work.get()) is not None:
                future, fn, args, kwargs = item
                if future.set_running_or_notify_cancel():
                    try:
                        future.set_result(fn(*args, **kwargs))
                    except BaseException as exc:
                        future.set_exception(exc)
        finally:
            close_warm_server()

    def replace_stuck(self) -> int:
        """A thread is stuck in a grading the driver gave up on: the next job starts a thread in its place.
        Returns the slots lost meanwhile: none."""
        self._stuck += 1
        return 0

    def shutdown(self, wait: bool = True, *, cancel_futures: bool = False) -> None:
        """Each thread ends, closing its fork server, and is waited for; not where one is stuck in a grading
        (a daemon, it holds only its own fork server, which dies with grade-all)."""
        for _ in self._threads:
            self._work.put(None)
        if wait and not self._stuck:
            for t in self._threads:
                t.join()

    def reachable(self, at_once: bool = False) -> bool:
        return True

    def lost(self) -> str:
        return "this machine's workers stopped"

    def describe(self) -> str:
        return f"{self.slots} worker{'s' * (self.slots != 1)}"


def open_pool(executor: str, jobs: int, unconfined: bool, log):
    """The pool ``--executor`` names: ``local`` (``jobs`` threads) or ``dask://HOST:PORT``."""
    if executor in ("", "local"):
        return LocalPool(jobs)
    if executor.startswith(("dask://", "tcp://", "tls://")):
        try:
            from .cluster import DaskPool
        except ImportError:
            raise UsageError("--executor dask:// needs Dask: pip install -c constraints.txt -e '.[cluster]'") from None
        return DaskPool(executor.replace("dask://", "tcp://", 1), unconfined, log)
    raise UsageError(f"--executor {executor}: use local, or dask://HOST:PORT for a Dask scheduler")
