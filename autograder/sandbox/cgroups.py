"""A control group per grading child: memory and process count bounded by the kernel, counting every
page the job holds (anonymous memory, tmpfs and ``memfd`` files, page cache it dirties) and every
task it starts, wherever it moves them.

``RLIMIT_AS`` bounds one process's address space, and the runner's watch one process's resident
memory: neither sees pages held in a ``memfd`` or a tmpfs file, or in a second process. A memory
cgroup does. The runner makes one per child, moves the child in while it is stopped at the end of
its trusted set-up (no student code has run yet), and removes it when the child has ended, after
killing whatever is left in it: the cgroup's list of processes is also the most complete list of
stragglers there is.

Both hierarchies are handled: cgroup v1 (a ``memory`` and a ``pids`` hierarchy, as on the kit's own
machines) and v2 (one unified tree). The group is made below the grader's own, so whatever limit the
machine puts on the grader holds for its children too. Where the grader may not make one (an
ordinary user without a delegated tree, a container that mounts the tree read-only), ``JobGroup``
says why, and the child is bounded by its rlimits, the watch and the syscall filter alone.
"""
from __future__ import annotations

import os
import secrets
import time
from pathlib import Path

from .linux import kill_until_gone

MOUNT = Path("/sys/fs/cgroup")
PREFIX = "attention-lab-"  # then the grading process's pid and a token: attention-lab-<pid>-<token>


class NoGroup(Exception):
    """No control group could be made: ``str()`` says why, in one sentence."""


def _own_path(controller: str) -> str:
    """This process's group in ``controller``'s v1 hierarchy ("" for v2's unified line), from /proc/self/cgroup."""
    with open("/proc/self/cgroup") as f:
        for line in f:
            _, names, path = line.rstrip("\n").split(":", 2)
            if controller in names.split(","):
                return path
    raise NoGroup(f"this process is in no {controller or 'unified'} cgroup")


def _hierarchies() -> dict[str, Path]:
    """{"memory": folder, "pids": folder} where a job's groups are made below this process's own, and
    "cpuacct" where v1 mounts it (its CPU time, ``JobGroup.cpu_s``; v2 counts it in every group): v1 first
    (one hierarchy per controller), else v2 (one folder for all)."""
    found = {}
    for controller in ("memory", "pids"):
        top = MOUNT / controller
        if (top / "cgroup.procs").exists():
            found[controller] = top / _own_path(controller).lstrip("/")
    if len(found) == 2:
        if (MOUNT / "cpuacct" / "cpuacct.usage").exists():
            try:
                found["cpuacct"] = MOUNT / "cpuacct" / _own_path("cpuacct").lstrip("/")
            except NoGroup:
                pass
        return found
    if (MOUNT / "cgroup.controllers").exists():  # v2 mounted at the top
        own = MOUNT / _own_path("").lstrip("/")
        controllers = (own / "cgroup.controllers").read_text().split()
        if not {"memory", "pids"} <= set(controllers):
            raise NoGroup("the grader's own cgroup does not hand the memory and pids controllers down")
        return {"memory": own, "pids": own}
    raise NoGroup(f"no memory and pids cgroup controllers are mounted under {MOUNT}")


def _write(path: Path, value: object) -> None:
    with open(path, "w") as f:
        f.write(str(value))


class JobGroup:
    """One child's control group(s). ``JobGroup(memory_bytes, tasks)`` makes them or raises ``NoGroup``."""

    def __init__(self, memory_bytes: int, tasks: int):
        self.memory_bytes, self.tasks = memory_bytes, tasks
        self.folders: list[Path] = []
        try:
            places = _hierarchies()
            _reclaim(places)
            name = f"{PREFIX}{os.getpid()}-{secrets.token_hex(6)}"
            for controller, parent in places.items():
                folder = parent / name
                if folder not in self.folders:
                    folder.mkdir()
                    self.folders.append(folder)
            self.memory, self.pids = places["memory"] / name, places["pids"] / name
            self.v2 = self.memory == self.pids
            self.cpuacct = places["cpuacct"] / name if "cpuacct" in places else None
            self._limit()
        except NoGroup:
            self.remove()
            raise
        except OSError as exc:
            self.remove()
            raise NoGroup(f"the grader may not make a cgroup here ({exc.strerror or exc})") from None

    def _limit(self) -> None:
        if self.v2:
            _write(self.memory / "memory.max", self.memory_bytes)
            if (self.memory / "memory.swap.max").exists():
                _write(self.memory / "memory.swap.max", 0)  # swap is memory the limit would not see
            _write(self.pids / "pids.max", self.tasks)
            return
        _write(self.memory / "memory.limit_in_bytes", self.memory_bytes)
        memsw = self.memory / "memory.memsw.limit_in_bytes"
        if memsw.exists():  # memory and swap together: swapping out does not make room past the limit
            _write(memsw, self.memory_bytes)
        _write(self.pids / "pids.max", self.tasks)

    def add(self, pid: int) -> None:
        """Move process ``pid`` (all its threads) in: raises ``NoGroup``."""
        try:
            for folder in self.folders:
                _write(folder / "cgroup.procs", pid)
        except OSError as exc:
            raise NoGroup(f"the child could not be moved into its cgroup ({exc.strerror or exc})") from None

    def cpu_s(self) -> float | None:
        """The CPU seconds every task of the group has used, ended ones too, exactly (cpuacct's usage in ns,
        or v2's cpu.stat in µs); None where neither is there."""
        try:
            if self.v2:
                stat = dict(line.split() for line in (self.memory / "cpu.stat").read_text().splitlines() if line)
                return int(stat["usage_usec"]) / 1e6
            if self.cpuacct is not None:
                return int((self.cpuacct / "cpuacct.usage").read_text()) / 1e9
        except (OSError, ValueError, KeyError):
            pass
        return None

    def hold(self) -> int:
        """Let nothing start in the group, process or thread, until ``release``: its ``pids.max`` becomes the
        number of tasks it has now. Returns the count of starts refused so far, for ``refused``."""
        try:
            _write(self.pids / "pids.max", int((self.pids / "pids.current").read_text()))
        except (OSError, ValueError) as exc:
            raise NoGroup(f"the child's cgroup could not be held ({exc})") from None
        return self.refused()

    def release(self) -> None:
        """Let tasks start again, up to the group's own bound."""
        _write(self.pids / "pids.max", self.tasks)

    def refused(self) -> int:
        """How many times the group was refused a new task at its ``pids.max`` (``pids.events``' max)."""
        try:
            counts = dict(line.split() for line in (self.pids / "pids.events").read_text().splitlines() if line.strip())
            return int(counts.get("max", 0))
        except (OSError, ValueError):
            return 0

    def members(self) -> list[int]:
        found: set[int] = set()
        for folder in self.folders:
            try:
                found.update(int(p) for p in (folder / "cgroup.procs").read_text().split())
            except (OSError, ValueError):
                pass
        return sorted(found)

    def ran_out_of_memory(self) -> bool:
        """Did the kernel's OOM killer act in this group, or its usage reach the limit?"""
        try:
            if self.v2:
                text = (self.memory / "memory.events").read_text()
                counts = dict(line.split() for line in text.splitlines() if line.strip())
                return int(counts.get("oom_kill", 0)) > 0
            text = (self.memory / "memory.oom_control").read_text()
            counts = dict(line.split() for line in text.splitlines() if line.strip())
            peak = int((self.memory / "memory.max_usage_in_bytes").read_text())
            return int(counts.get("oom_kill", 0)) > 0 or peak >= self.memory_bytes
        except (OSError, ValueError):
            return False

    def kill_all(self) -> None:
        """SIGKILL every process in the group until none is left (a fork bomb races for a moment;
        pids.max bounds it)."""
        kill_until_gone(self.members, rounds=200, pause=0.005)

    def remove(self) -> None:
        """Kill what is left and remove the group; never raises (a group that will not go is left for
        the next grading to find: its name starts with ``PREFIX``)."""
        self.kill_all()
        for folder in reversed(self.folders):
            for _ in range(100):  # rmdir fails while the last killed task is being reaped
                try:
                    folder.rmdir()
                    break
                except FileNotFoundError:
                    break
                except OSError:
                    time.sleep(0.01)
        self.folders = []


def _reclaim(places: dict[str, Path]) -> None:
    """Remove the groups a grading killed with ``kill -9`` left behind (its pid, in their name, is gone):
    kill what is still in them, then remove them. Never another live grading's."""
    for parent in set(places.values()):
        for folder in parent.glob(PREFIX + "*"):
            owner = folder.name[len(PREFIX):].split("-")[0]
            if owner.isdigit() and not os.path.exists(f"/proc/{owner}"):
                stale = JobGroup.__new__(JobGroup)
                stale.folders = [folder]
                stale.remove()


def unavailable() -> str | None:
    """Why a grading child here gets no cgroup, in words; None when it gets one."""
    try:
        JobGroup(2**30, 64).remove()
    except NoGroup as exc:
        return str(exc)
    return None
