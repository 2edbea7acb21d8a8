"""A class graded by the workers of a Dask cluster (``grade-all --executor dask://HOST:PORT``): the pool
``pools.open_pool`` opens for it. Imported only then: Dask (``distributed``) is the ``[cluster]`` extra.

A worker may grade the class only where ``worker.refusal`` finds nothing against it (the driver's kit,
the class's devices, the kernel's confinement), asked of every worker when the class starts and of every
worker that starts later (``Admission``). A job whose worker died is sent again by Dask to another, up to
the scheduler's ``allowed-failures``; past that it ends as ``KilledWorker``, the grader's failure for that
student alone, left for the next run.
"""
from __future__ import annotations

import time
from concurrent.futures import Future

from distributed import Client, KilledWorker, WorkerPlugin
from distributed.core import Status

from ...errors import UsageError
from .worker import facts, kit_fingerprint, refusal

SCHEDULER_GRACE_S = 30.0  # how long a cluster's scheduler may be out of reach before the run stops
CONNECT_TIMEOUT_S = 20  # how long the driver waits for a scheduler to answer at the start


def admission(kit: str, unconfined: bool) -> str:
    """The Dask resource a worker holds while it may grade a class of ``kit`` (``Admission``), and each of the
    class's jobs asks for: a worker of another kit, or one that cannot confine graded code where the
    instructor did not allow it, never holds it, so the scheduler sends it none of the class's work."""
    return f"attention-lab-{kit[:16]}" + ("-unconfined" if unconfined else "")


class Admission(WorkerPlugin):
    """A Dask worker plugin: on every worker, now and whenever one starts (a new one, or one its nanny
    restarted after it died), it asks the worker's ``facts`` and, where it may grade (``worker.refusal``),
    gives it the class's resource (``admission``), one per thread, and takes it away where it may not.
    Each class registers it again, so every worker is asked again then. Restrictions by address would pin
    a job to a worker that is gone after a restart, and the job would never run."""

    def __init__(self, kit: str, devices, unconfined: bool) -> None:
        self.kit, self.devices, self.unconfined = kit, sorted(devices), unconfined
        self.name = admission(kit, unconfined)

    async def setup(self, worker) -> None:
        try:
            refused = refusal(self.kit, self.devices, self.unconfined)
        except Exception as exc:  # it cannot even say what it runs: it holds none (not an earlier class's grant)
            refused = repr(exc)
        await worker.set_resources(**{self.name: 0 if refused else worker.state.nthreads})
        if not refused and worker.status == Status.running:
            # The scheduler looks for work a worker can take when the worker is added or unpaused, not when
            # its resources change: a job that found no worker holding this one meanwhile (a restarted worker
            # registers before this plugin runs) would wait for ever. A pause and its end make it look again.
            worker.status = Status.paused
            worker.status = Status.running


class DaskPool:
    """The workers of the Dask scheduler at ``address`` that may grade this class: those that run the
    driver's kit and, unless ``unconfined``, confine graded code (``worker.refusal``; the others are
    named, and ``Admission`` keeps the class's work off them). GPU workers (started with ``--resources
    GPU=1``) grade cuda too: the class is then graded on them alone, so that every student is graded on
    the same devices."""

    kind = "dask"

    def __init__(self, address: str, unconfined: bool, log) -> None:
        self.student_faults = (KilledWorker,)
        self.address = address
        try:
            self.client = Client(address, timeout=f"{CONNECT_TIMEOUT_S}s", set_as_default=False)
        except (OSError, TimeoutError) as exc:
            raise UsageError(f"no Dask scheduler answered at {address}: {exc}") from None
        self._lost_since: float | None = None
        try:
            self._admit(unconfined, log)
        except BaseException:
            self.client.close()
            raise

    def _admit(self, unconfined, log) -> None:
        # A worker that cannot even answer (another kit without this module, a broken environment) is refused too.
        said = {address: found if isinstance(found, dict) else {"error": found}
                for address, found in self.client.run(facts, on_error="return").items()}
        info = self.client.scheduler_info(n_workers=-1)["workers"]
        answered = {a: f for a, f in said.items() if "error" not in f}
        gpu = {a for a in answered if info.get(a, {}).get("resources", {}).get("GPU") and "cuda" in said[a]["devices"]}
        self.devices = {"cpu", "meta"} | ({"cuda"} if gpu else set())
        self.workers = {}
        for address in sorted(said):
            found = said[address]
            why = (f"it does not run this kit's worker code ({found['error']!r})" if "error" in found
                   else refusal(kit_fingerprint(), self.devices, unconfined, found))
            if why and (address in gpu or not gpu):
                log(f"worker {address} ({found.get('host', '?')}) may not grade this class: {why}")
            elif not why:
                self.workers[address] = {**found, "threads": info.get(address, {}).get("nthreads", 1)}
        if not self.workers:
            raise UsageError(f"no worker of the Dask scheduler at {self.address} may grade this class"
                             + ("" if said else " (it has none yet: start grade-all once the workers are up)"))
        plugin = Admission(kit_fingerprint(), self.devices, unconfined)
        try:
            self.client.register_plugin(plugin, name=plugin.name)
        except Exception as exc:  # a worker that could not load it never holds the class's resource
            log(f"a worker could not take the class's admission check ({exc!r}); it gets none of the class's work")
        self.admission, self.gpu = plugin.name, bool(gpu)
        self.executor = self.client.get_executor(pure=False, resources={plugin.name: 1, **({"GPU": 1} if gpu else {})})

    @property
    def slots(self) -> int:
        """The jobs the admitted workers run at once, now: a worker that joined since is counted, one that
        left is not (a GPU worker runs as many as it has GPUs)."""
        return max(1, sum(int(min(w.get("nthreads", 1), w["resources"].get("GPU", 0) if self.gpu else 10**6))
                          for w in self._admitted()))

    def submit(self, fn, /, *args) -> Future:
        return self.executor.submit(fn, *args)

    def reachable(self, at_once: bool = False) -> bool:
        """Whether the scheduler is there, and has a worker that may grade the class. ``at_once``: is it there
        now (a future cancelled while it is not was cancelled by the lost connection). Otherwise False only
        once it has been away, or without such a worker, for ``SCHEDULER_GRACE_S``: a future then may never
        end, and the run stops with what was graded saved."""
        if at_once:
            return self.client.status == "running"
        if self.client.status == "running" and self._admitted():
            self._lost_since = None
            return True
        self._lost_since = self._lost_since or time.monotonic()
        return time.monotonic() - self._lost_since < SCHEDULER_GRACE_S

    def lost(self) -> str:
        if self.client.status != "running":
            return f"the Dask scheduler at {self.address} was lost"
        return f"the Dask scheduler at {self.address} has had no worker that may grade this class for a while"

    def replace_stuck(self) -> int:
        """A worker thread is stuck in a grading the driver gave up on: one slot fewer while it is."""
        return 1

    def _admitted(self) -> list:
        try:
            workers = self.client.scheduler_info(n_workers=-1)["workers"].values()
        except (OSError, TimeoutError):
            return []
        return [w for w in workers if w.get("resources", {}).get(self.admission)]

    def shutdown(self, wait: bool = True, *, cancel_futures: bool = False) -> None:
        try:
            self.executor.shutdown(wait=False)
        finally:
            self.client.close(timeout=5)

    def describe(self) -> str:
        threads = sum(w["threads"] for w in self.workers.values())  # when the class started
        return (f"{len(self.workers)} Dask worker{'s' * (len(self.workers) != 1)} ({threads} thread"
                f"{'s' * (threads != 1)}) of {self.address}")
