"""The child process: confines itself, imports the student's package, runs the probes it is asked for.

Forked by the fork server (``server.py``), which has run ``preload`` once. Everything before
``confine.arm`` is trusted set-up that runs before any student code. The probes come from the
module the job names (``protocol.PROBES``), imported by that name: it offers ``PROBES`` (name ->
probe, with ``fn``, ``library_attention`` and ``timed``), ``Lab`` (lazy access to the student's modules)
and ``lab.attempt`` (a call whose exception becomes an error record). It runs one task per request of
the grader's, writes one file of plain data for it, atomically, and answers (see ``protocol``): what it
writes is outputs, never a verdict, and the grader reads only the answer to what it asked.
"""
import contextlib
import importlib
import os
import signal
import sys
from collections.abc import Callable, Mapping
from pathlib import Path

from ..public.feedback import problem
from ..public.watch import Watch, describe_changes
from . import confine, linux, protocol, syscalls, world
from .linux import die_with_parent


def preload(meta: bool, probes: str = protocol.PROBES) -> None:
    """What every child needs before its job is known: torch and the probes, imported once by the
    fork server. ``meta``: also warm up the meta device (see ``_warm_meta``)."""
    import torch  # noqa: F401

    importlib.import_module(probes).load()
    settle_dynamo_wrappers()
    if meta:
        _warm_meta()


def settle_dynamo_wrappers() -> None:
    """Spare every grading the import of ``torch._dynamo`` (0.9 s: sympy, the compiler and more).

    torch wraps a few hundred of its functions with ``torch._disable_dynamo`` (the meta device's
    references, ``torch.nn.init``, the optimizers' parameter groups, every dispatch mode's hook, the
    kit's included), and the wrapper imports ``torch._dynamo`` at its first call only to learn how to
    call the function outside a ``torch.compile`` region: as it is. It keeps that answer on the
    function (``__dynamo_disable``); here every wrapper that exists now is given it, before anything
    calls one. Code that compiles still imports torch._dynamo, and then traces into these functions
    instead of skipping them (it breaks the graph there, as it would for any other function it cannot
    trace). Where torch's wrapper looks different, nothing is settled and torch imports its compiler
    on first use, as before: slower, never wrong.

    Importing ``torch._dynamo`` rewraps ``torch.manual_seed`` unless that is wrapped already, which the
    child's tamper watch would blame on the submission that happened to trigger the import (a dispatch
    mode of its own, a compiled function, an optimizer's step): so it is wrapped here, as torch would."""
    import gc
    import types

    import torch
    import torch.jit._builtins

    if torch.manual_seed is torch.random.manual_seed:
        torch.manual_seed = torch._disable_dynamo(torch.manual_seed)
        torch.jit._builtins._register_builtin(torch.manual_seed, "aten::manual_seed")
    wrapper = torch._disable_dynamo(lambda: None).__code__
    if "fn" not in wrapper.co_freevars:
        return
    slot = wrapper.co_freevars.index("fn")
    for f in gc.get_objects():
        if type(f) is types.FunctionType and f.__code__ is wrapper:
            assert f.__closure__ is not None  # its code has free variables
            fn = f.__closure__[slot].cell_contents
            if getattr(fn, "__dynamo_disable", None) is None:
                setattr(fn, "__dynamo_disable", fn)  # a literal name: Python would mangle it in a class


def _warm_meta() -> None:
    """torch's first meta-device op imports what that device needs (its Python references, sympy:
    0.25 s). A fork server that many children share does it once; a child whose server did not
    leaves it to the first task that uses the device (it changes nothing the tamper watch sees)."""
    import torch

    torch.empty(2, device="meta") @ torch.empty(2, device="meta")


def _warm_cuda() -> None:
    """CUDA's first use (the driver, NVML through ctypes, cuBLAS, the attention kernels, the RNG)
    happens here, trusted, before ``confine.arm`` refuses ctypes and before the tamper snapshot: else
    the first probe on CUDA would be blamed for torch's own start. In the child, never in the fork
    server: a CUDA context does not survive a fork."""
    import torch
    import torch.nn.functional as F

    exact_float32()
    x = torch.randn(2, 2, 8, 8, device="cuda", requires_grad=True)
    future = torch.ones(8, 8, dtype=torch.bool, device="cuda").triu(1)
    weights = F.dropout(torch.softmax((x @ x.transpose(-1, -2)).masked_fill(future, -torch.inf), -1), 0.5)
    out = F.scaled_dot_product_attention(x, x, x, is_causal=True) + F.layer_norm(weights @ x, (8,))
    # (torch leaves Tensor.backward unannotated)
    F.linear(out, torch.ones(8, 8, device="cuda")).sum().backward()  # type: ignore[no-untyped-call]
    torch.cuda.synchronize()
    # Asked before the start, the device count is not kept, and asked again (torch.manual_seed before
    # every task asks it) it is read through NVML's library by ctypes: now it is kept.
    torch.cuda.device_count()
    torch.manual_seed(0)


def _warm_threads() -> None:
    """Start torch's CPU threads now, where the course gives the child more than one (``threads``): their
    team starts at the first parallel kernel, and a check of a stage written by hand may start none
    (``runner._Child.ask``), so the first such check would be refused the threads torch itself wants."""
    import torch

    if torch.get_num_threads() > 1:
        torch.ones(2**20).add_(1)  # large enough to be split among the threads


def _surface_cuda_errors() -> None:
    """End the child here if this task's CUDA kernels failed. CUDA runs them asynchronously, so an
    index out of range (a device-side assertion, where the CPU raises IndexError) is reported at the
    next synchronisation, which would otherwise come in a later task (its reseed, say) and charge that
    one; and the error is sticky: every later CUDA call fails too. Ended in this task, it is this
    task's (the grader blames the task in progress, with this last message), and the tasks after it
    run in a fresh child, as on the CPU."""
    import torch

    try:
        torch.cuda.synchronize()
    except Exception as exc:  # torch.AcceleratorError (a RuntimeError): the context is lost
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        sys.stderr.write(f"\n{first} (in this check's CUDA kernels)\n")
        sys.stderr.flush()
        os._exit(1)


def exact_float32() -> None:
    """float32 products in full float32 on CUDA, as on the CPU: with TF32 (10-bit mantissas) a correct
    layer on an Ampere or Hopper GPU misses the oracles' tolerance (rtol 1e-4) by an order of magnitude.
    Set before every task, so that a submission that turns TF32 on costs only its own task."""
    import torch

    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False


def main(job_path: str) -> None:
    parent = os.getppid()  # the fork server
    job = protocol.Job.read(Path(job_path))
    out = Path(job.out)
    sys.dont_write_bytecode = True  # leave no __pycache__ behind

    import torch

    probes = importlib.import_module(job.probes)
    table = probes.load()
    # The grader's FIFOs, opened while the control folder is still in reach (it is not in the child's
    # world); the grader holds both open already, so neither open waits.
    asks, answers = os.open(job.ask, os.O_RDONLY | os.O_CLOEXEC), os.open(job.answer, os.O_WRONLY | os.O_CLOEXEC)
    # The loop's own ways of reading requests and answering, taken now, before any student code runs: code
    # that replaced os.read could rewrite the requests it is given (the watch below also undoes it).
    read, write = os.read, os.write
    lim = job.limits  # first: counting the user's processes needs all of /proc, which the child's world lacks
    confine.limit(lim.memory, lim.file, lim.cpu_total, lim.processes, address_space="cuda" not in job.devices)
    # While this process has one thread (a user namespace needs it):
    layers = {"user": job.uid, **(confine.namespaces() if "namespaces" in job.layers else {})}
    layers["keyring"] = confine.new_session_keyring()  # before CUDA's threads: each thread keeps its own
    layers.update(_enclose(job, layers))
    if "cuda" in job.devices:
        _warm_cuda()  # inside the world already: CUDA's threads and files are under the same rule
    _warm_threads()
    if job.uid is not None:
        confine.drop_privileges(job.uid, job.gid)
    layers.update(_filter(job))  # last: the calls it refuses include some of those above
    die_with_parent(parent)  # after the change of user, which clears it
    (out / protocol.LAYERS).write_text(protocol.IsolationReport(**layers).to_json())  # a key of no field fails here
    # Stopped until the grading process has read that report: no student code has run yet, so none
    # can have rewritten it (the folder is one the submission may write). It sends SIGCONT.
    os.kill(os.getpid(), signal.SIGSTOP)

    # From here on the grader is out of the import path: only torch & co. and the submission,
    # last, so that a torch.py or autograder/ shipped in it shadows nothing.
    sys.path[:] = [p for p in sys.path if p != job.kit_parent] + [job.submission]
    refusals: list[str] = []  # what the audit hook refused, in words
    grader_files = {m.__file__ for name, m in sys.modules.items()
                    if name.split(".")[0] == "autograder" and getattr(m, "__file__", None)}
    confine.arm(job.sandbox, job.secrets, grader_files, refusals.append)
    lab = probes.Lab(job.submission)
    for module, message in job.broken.items():
        lab.mark_broken(module, message)
    for module, reason in job.left_out.items():
        lab.mark_left_out(module, reason)
    watch = Watch()
    # torch.manual_seed also queues CUDA's seed for a later start, with the stack in words (0.5 ms
    # here, before each of 171 tasks): where no task runs on CUDA, the CPU's generator is all there is.
    reseed: Callable[[], torch.Generator] = ((lambda: torch.manual_seed(0)) if "cuda" in job.devices
                                             else (lambda: torch.default_generator.manual_seed(0)))

    timed_before: Path | None = None  # the last timed request's result: the grader has read it
    for request in protocol.requests(asks, read):
        task = request.task
        refusals.clear()
        probe = table.get(task.name) if task.kind == "probe" else None
        hand = confine.HandWritten() if request.hand else None  # imports of such a stage's module too
        reseed()
        torch.set_default_dtype(torch.float32)
        exact_float32()
        with torch.enable_grad(), hand or contextlib.nullcontext():
            if task.kind == "import":
                result = lab.attempt(lambda: lab.load(task.name) and {"ok": True})
            elif probe is None or probe.race:  # a race is driven by the grader, never run here
                result = {"error": problem("NoSuchProbe", f"the grader asked for {task.name}, which is no probe")}
            elif probe.timed:
                result = lab.attempt(probe.fn, lab, task.device, request.seed)
            else:
                result = lab.attempt(probe.fn, lab, task.device)
        if task.device == "cuda":
            _surface_cuda_errors()
        # Checked after every task, before anything is saved: torch.save may have been patched too.
        subject = (f"attention_lab/{task.name}.py, while being imported," if task.kind == "import"
                   else "the submission")
        why = _untrustworthy(subject, watch.changes(), refusals, hand)
        if why:
            result = {"error": problem(*why)}
            if task.kind == "import":
                lab.mark_broken(task.name, why[1])
        done = protocol.result_file(out, request)
        tmp = done.with_suffix(".tmp")
        if request.seed is not None and type(result) is torch.Tensor and str(result.dtype)[6:] in protocol.RAW_DTYPES:
            tmp.write_bytes(_raw(result))
        else:
            torch.save(result, tmp)
        os.replace(tmp, done)
        if timed_before is not None:  # a race's outputs are large and read once: the folder keeps one
            timed_before.unlink(missing_ok=True)
        timed_before = done if request.seed is not None else None
        write(answers, request.answer_line())
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)  # the grader has no more requests; no atexit hook or finaliser of the submission's runs


def _raw(t: object) -> bytes:
    """A tensor as ``protocol.RAW_TENSOR`` spells it: the line, its dtype and shape, its bytes."""
    import json

    import torch

    assert type(t) is torch.Tensor
    t = t.detach().cpu().contiguous()
    header = json.dumps({"dtype": str(t.dtype).removeprefix("torch."), "shape": list(t.shape)}).encode()
    return protocol.RAW_TENSOR + header + b"\n" + t.reshape(-1).view(torch.uint8).numpy().tobytes()


def _enclose(job: protocol.Job, layers: Mapping[str, object]) -> dict[str, object]:
    """Shut the child into its world (``world``): a root of its own, then Landlock. Returns what
    held, for the report: ``root`` and ``landlock`` (its ABI, 0 for none), each with why not."""
    found: dict[str, object] = {}
    import_path = [p for p in sys.path if p != job.kit_parent]
    allowed = world.World.of_child(import_path, job.submission, job.home, job.out, job.secrets,
                                   cuda="cuda" in job.devices)
    try:
        if not layers.get("mounts"):
            raise world.NoRoot("no mount namespace" if "namespaces" in job.layers else "namespaces not tried")
        world.own_root(allowed, job.stash, job.uid, job.gid)  # its home a tmpfs of its own, for the user it becomes
        os.chdir(job.out)
        found["root"], found["home"] = True, "tmpfs"
    except world.NoRoot as exc:
        if job.own_root:  # the grading process found that children can: something changed since
            sys.exit(f"the grader could not give graded code a root of its own: {exc}")
        found["root"], found["root_why"], found["home"] = False, str(exc), "the workspace's folder (no root of its own)"
    if job.uid is not None and not found["root"]:
        closed = confine.unreachable(import_path)
        if closed:
            sys.exit(f"the unprivileged grading user cannot read {closed[0]}, and this machine does not let the "
                     "grader give it a root of its own (no mount namespace): make the folders on the way to it "
                     "enterable by others (chmod o+x), or grade as a user other than root")
    try:
        if "landlock" not in job.layers:
            raise OSError("Landlock not tried")
        found["landlock"] = world.landlock(allowed)
    except (OSError, ImportError) as exc:  # no Landlock here: an old kernel, or a filter that refuses its calls
        found["landlock"], found["landlock_why"] = 0, str(exc)
    if job.uid is None:  # root gives up its capabilities by becoming the grading user (drop_privileges)
        found["capabilities"] = "dropped" if linux.drop_capabilities() else "kept"
    found["threads"] = len(os.listdir("/proc/self/task"))
    return found


def _filter(job: protocol.Job) -> dict[str, object]:
    """The seccomp filter (``syscalls``), in both modes (namespaces or Landlock alone): ``seccomp``, with
    why not. It needs no_new_privileges, which the change of user has set as root."""
    try:
        if "seccomp" not in job.layers:
            raise OSError("seccomp not tried")
        if job.uid is None:
            linux.no_new_privileges()
        syscalls.install()
        return {"seccomp": True}
    except (OSError, ImportError) as exc:  # no libseccomp here, or a kernel without seccomp
        return {"seccomp": False, "seccomp_why": str(exc)}


def _untrustworthy(subject: str, changed: list[str], refusals: list[str],
                   hand: confine.HandWritten | None) -> tuple[str, str] | None:
    """(kind, message) when a task's result cannot be trusted, else None."""
    if changed:
        return ("Tampered", f"{subject} {describe_changes(changed)}, which the grader relies on, "
                "so no result can be trusted")
    if refusals:
        return "Refused", f"{subject} tried to {refusals[0]}, which grading does not allow"
    if hand is not None and hand.used:
        return "LibraryAttention", (f"uses {hand.used}, which is not allowed in this stage: "
                                    "its point is to write attention by hand")
    return None

