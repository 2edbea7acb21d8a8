"""The child's syscall filter (seccomp): what graded code may not ask of the kernel at all.

Landlock and a root of its own decide which files the child reaches. Some calls reach past any file
rule: they act on other processes (the grader and its fork server run as the child's own user when an
ordinary user grades), start processes (the child starts threads and nothing else), make namespaces and
mounts, reach the user's keyrings, open the kernel's widest interfaces, leave IPC objects behind for the
next student, open network sockets, or hold memory that no rlimit counts. This filter refuses them, for
the child and its threads, and nothing can lift it again.

The filter allows every call but those in ``REFUSED``; a refused call fails with an error (EPERM, or
what the table says), never a kill, so a library that tries one sees an ordinary error. It is built
with libseccomp (the ``pyseccomp`` bindings) and installed by ``child.main`` after Landlock and the
change of user, before any student code runs (``install``).
"""
from __future__ import annotations

import ctypes
import errno
import os
import platform

from .linux import libc

try:
    # Imported now, in the fork server, not in the child's world: pyseccomp looks both libraries up
    # with ldconfig, which neither a root of its own nor Landlock lets the child run.
    import pyseccomp
    _MISSING = None
except ImportError:
    pyseccomp, _MISSING = None, "the pyseccomp package is not installed"
except (RuntimeError, OSError) as exc:  # the package is there, the system's libseccomp is not
    pyseccomp, _MISSING = None, f"libseccomp could not be loaded ({exc})"

SELF = "self"  # in a condition: the child's own pid, known when the filter is made
NOT_ITSELF = "not itself"  # the rules of ``_not_itself``
PRIO_PROCESS, IOPRIO_WHO_PROCESS, AF_UNIX, PR_GET_SECCOMP = 0, 1, 1, 21
CLONE_NEW = {"NEWNS": 0x00020000, "NEWCGROUP": 0x02000000, "NEWUTS": 0x04000000, "NEWIPC": 0x08000000,
             "NEWUSER": 0x10000000, "NEWPID": 0x20000000, "NEWNET": 0x40000000}
CLONE_THREAD = 0x00010000
CLONE_FLAGS_ARG = 1 if platform.machine().startswith("s390") else 0  # where clone's flags come (s390: second)

# A rule is refused when all its conditions hold; a call with several rules is refused when any does. A
# condition: (argument, "==", value), (argument, "!=", value), or (argument, ">", value), or (argument,
# "&", mask, value): the argument with ``mask`` applied equals ``value``.
F_SETOWN, F_SETSIG, F_SETOWN_EX = 8, 10, 15  # fcntl's commands that pick who gets a descriptor's signals
FIOSETOWN, SIOCSPGRP = 0x8901, 0x8902  # ioctl's
# A condition's value may be SELF; NOT_ITSELF stands for the rules of ``_not_itself``.
Condition = tuple[int, str, "int | str"] | tuple[int, str, int, int]
Rules = tuple[tuple[Condition, ...], ...]
ALWAYS: Rules = ((),)


def unless(arg: int, value: int | str = 0) -> Rules:
    """Refused unless argument ``arg`` is ``value`` (0: the calling process, for most calls)."""
    return (((arg, "!=", value),),)


REFUSED: dict[str, tuple[int, Rules | str]] = {
    # Other processes. When an ordinary user grades, the grader and its fork server are the child's own
    # user, and the kernel lets it lower their limits (prlimit), renice, re-pin or reschedule them, move
    # their memory, trace them, read or write their memory, and signal them. The child may still name
    # itself: pid 0 (or, to send a signal, its own pid).
    "prlimit64": (errno.EPERM, unless(0)),
    "setpriority": (errno.EPERM, unless(0, PRIO_PROCESS) + unless(1)),  # PRIO_USER: every process of the user
    "ioprio_set": (errno.EPERM, unless(0, IOPRIO_WHO_PROCESS) + unless(1)),
    **dict.fromkeys(("sched_setaffinity", "sched_setscheduler", "sched_setparam", "sched_setattr",
                     "migrate_pages", "move_pages"), (errno.EPERM, unless(0))),
    "kill": (errno.EPERM, NOT_ITSELF),  # pid 0 (its own process group) and its own pid alone
    # A signal without kill: a descriptor's owner gets SIGIO, or any signal F_SETSIG names, when it is
    # ready; the owner may be any process of the user (F_SETOWN, F_SETOWN_EX, and ioctl's FIOSETOWN and
    # SIOCSPGRP). Its own descriptors' other commands stay allowed.
    "fcntl": (errno.EPERM, tuple(((1, "==", cmd),) for cmd in (F_SETOWN, F_SETSIG, F_SETOWN_EX))),
    "ioctl": (errno.EPERM, tuple(((1, "==", cmd),) for cmd in (FIOSETOWN, SIOCSPGRP))),
    **dict.fromkeys(("tkill", "tgkill", "rt_sigqueueinfo", "rt_tgsigqueueinfo"), (errno.EPERM, unless(0, SELF))),
    **dict.fromkeys(("ptrace", "process_vm_readv", "process_vm_writev", "process_madvise", "process_mrelease",
                     "kcmp", "pidfd_open", "pidfd_getfd", "pidfd_send_signal"), (errno.EPERM, ALWAYS)),
    # Namespaces and mounts. A new user namespace gives back every capability inside it, and with a mount
    # namespace, a way to rebuild a root without the rules of the one the child was given. The child's
    # namespaces and root are made before the filter; nothing after needs another.
    **dict.fromkeys(("unshare", "setns", "mount", "umount2", "pivot_root", "chroot", "open_tree", "move_mount",
                     "fsopen", "fsmount", "fsconfig", "fspick", "mount_setattr"), (errno.EPERM, ALWAYS)),
    # Processes: the child may start threads (torch's, CUDA's, its own within its budget) and nothing else.
    # A process it started would be counted in no CPU time of the child's, could leave its group and session
    # and outlive the grading, and could stand aside so that the child looks starved; a program it ran
    # (execve) would leave the audit hook behind. So fork, vfork and clone without CLONE_THREAD are refused,
    # and so is clone with a namespace flag, and execve.
    "clone": (errno.EPERM, tuple(((CLONE_FLAGS_ARG, "&", flag, flag),) for flag in CLONE_NEW.values())
              + (((CLONE_FLAGS_ARG, "&", CLONE_THREAD, 0),),)),
    # clone3's flags lie in memory, which a filter cannot read: ENOSYS makes glibc fall back to clone.
    "clone3": (errno.ENOSYS, ALWAYS),
    **dict.fromkeys(("fork", "vfork", "execve", "execveat"), (errno.EPERM, ALWAYS)),
    # Keyrings belong to the user, not to the child's world: the session keyring it was forked with is the
    # grader's, and the user's keyring is every process's of that user. The child gets an empty session
    # keyring of its own before the filter (``confine.new_session_keyring``) and may not touch any other.
    **dict.fromkeys(("keyctl", "add_key", "request_key"), (errno.EPERM, ALWAYS)),
    # The kernel's widest interfaces, which nothing graded needs: bpf and perf_event_open (programs run in
    # the kernel, other processes' counters), userfaultfd (stalls the kernel mid-copy, a tool for races),
    # io_uring (its operations are system calls this filter never sees).
    **dict.fromkeys(("bpf", "perf_event_open", "userfaultfd", "io_uring_setup", "io_uring_enter",
                     "io_uring_register"), (errno.EPERM, ALWAYS)),
    # IPC objects live in the kernel until someone removes them: a SysV queue, semaphore or shared memory
    # segment, or a POSIX message queue, left by one student is read by the next and outlives grading
    # (where the child has no IPC namespace), and the memory they hold is counted by no rlimit.
    **dict.fromkeys(("msgget", "msgsnd", "msgrcv", "msgctl", "semget", "semop", "semtimedop", "semctl", "shmget",
                     "shmat", "shmdt", "shmctl", "mq_open", "mq_unlink", "mq_timedsend", "mq_timedreceive",
                     "mq_notify", "mq_getsetattr"), (errno.EPERM, ALWAYS)),
    # Sockets of any family but AF_UNIX: where the kernel gives the child no network namespace (a
    # container that forbids unshare), an inet socket reaches the loopback and the network, and Landlock
    # governs UDP only from ABI 10. Netlink and the rest are the kernel's, not the child's.
    **dict.fromkeys(("socket", "socketpair"), (errno.EAFNOSUPPORT, unless(0, AF_UNIX))),
    # Memory that RLIMIT_AS does not count: a memfd's pages are a file's, not a mapping's, until mapped
    # (6 GiB held this way escaped the limit), and the grader may have no memory cgroup to count them.
    **dict.fromkeys(("memfd_create", "memfd_secret"), (errno.EPERM, ALWAYS)),
}


def _not_itself(own: int) -> Rules:
    """The rules that refuse ``kill`` for every pid but 0 and ``own``. libseccomp takes one condition per
    argument and rule, so the range 1 .. own - 1 becomes aligned blocks, each one masked compare;
    everything above ``own`` (negative pids too, as unsigned numbers) is one more rule."""
    rules: list[tuple[Condition, ...]] = [((0, ">", own),)]
    start = 1
    while start < own:
        size = start & -start  # the largest aligned block that starts here ...
        while start + size > own:  # ... that stays below ``own``
            size //= 2
        rules.append(((0, "&", ~(size - 1) & 0xFFFFFFFFFFFFFFFF, start),))
        start += size
    return tuple(rules)


def unavailable() -> str | None:
    """Why a child here cannot have the filter, in words; None when it can."""
    if pyseccomp is None:
        return _MISSING
    if libc.prctl(PR_GET_SECCOMP, 0, 0, 0, 0) < 0:
        return f"its kernel has no seccomp ({os.strerror(ctypes.get_errno())})"
    return None


def install() -> None:
    """Refuse ``REFUSED`` to this process, its threads and everything it starts, for good. Needs no
    privilege once no_new_privileges is set. Raises ``ImportError`` where the bindings or libseccomp
    are missing, ``OSError`` where the kernel refuses the filter. A call that libseccomp does not know
    on this machine's architecture does not exist there, and is left out."""
    if pyseccomp is None:
        raise ImportError(_MISSING)
    why = unavailable()
    if why:
        raise OSError(why)
    sc = pyseccomp
    ops = {"==": sc.EQ, "!=": sc.NE, ">": sc.GT, "&": sc.MASKED_EQ}
    own = os.getpid()
    rules = sc.SyscallFilter(sc.ALLOW)
    try:
        # Another architecture's calls (the 32-bit ABI, through int 0x80) have other numbers: refuse them all.
        rules.set_attr(sc.Attr.ACT_BADARCH, sc.ERRNO(errno.ENOSYS))
        rules.set_attr(sc.Attr.CTL_NNP, 1)
        rules.set_attr(sc.Attr.CTL_TSYNC, 1)  # every thread (CUDA's, started before), not only this one
        for name, (code, when) in REFUSED.items():
            if sc.resolve_syscall(sc.Arch.NATIVE, name) < 0:  # unknown here, or a pseudo-call of another arch
                continue
            for conditions in (_not_itself(own) if isinstance(when, str) else when):  # a word: NOT_ITSELF
                args = [sc.Arg(c[0], ops[c[1]], *[own if v == SELF else v for v in c[2:]]) for c in conditions]
                rules.add_rule(sc.ERRNO(code), name, *args)
        rules.load()
    except OSError as exc:
        raise OSError(f"the kernel refused the seccomp filter ({exc.strerror or exc})") from None
    finally:
        # Released now, by ctypes: after the audit hook is armed, a finaliser calling into libseccomp
        # would be refused, and blamed on the student's check.
        del rules
