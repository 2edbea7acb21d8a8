"""What every probe needs: the book's inputs, known weights loaded by name, error records,
and the measurements shared by several stages (shapes, causal leaks, dropout, devices)."""
from __future__ import annotations

import importlib
import io
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import torch
import torch.nn as nn
import torch.utils._pytree as pytree
from torch.utils._python_dispatch import TorchDispatchMode

from ..public.book import BATCH, INPUTS  # noqa: F401  (the chapter's inputs: public data the probes use)
from ..public.feedback import error_record, is_error_record, problem
from ..public.pictures import attention_of

@dataclass(frozen=True)
class Probe:
    name: str
    fn: object
    golden: bool  # deterministic output worth storing as golden data from the reference
    library_attention: bool  # may call F.scaled_dot_product_attention / nn.MultiheadAttention
    # Long, and alone in what it measures (a timed race): worth a child of its own, run beside the rest
    # where the machine has a core for it (``runner.run_tasks``'s ``apart``). Its verdict is the same either way.
    apart: bool = False
    timed: bool = False  # ``fn(lab, device, seed)``: asked once per round of a race, with that round's seed
    # ``fn(ask_student, ask_kit)`` is a race, driven from the grading process (``Probes.race``), never run in a child
    race: bool = False


class Probes(dict):
    """The probes one module declares, name -> ``Probe``: ``@PROBES.add(name)`` declares one, and
    ``autograder.probes.load`` gathers every module's. Declaring changes nothing outside the module."""

    def __init__(self, **defaults):
        super().__init__()
        self.defaults = defaults  # e.g. library_attention=True for a whole stage

    def add(self, name, golden=False, **options):
        def declare(fn):
            if name in self:
                raise ValueError(f"probe {name!r} is declared twice")
            settings = {"library_attention": False, "apart": False, "timed": False, "race": False,
                        **self.defaults, **options}
            self[name] = Probe(name, fn, golden, settings["library_attention"], settings["apart"],
                               settings["timed"], settings["race"])
            return fn

        return declare

    def race(self, name, **options):
        """Declare a race: a function of (ask_student, ask_kit) that the grading process calls with the
        runner's two ways of asking, one request at a time, and that returns the check's observation.
        It asks and compares; it holds no expected value but what the kit's own child answers."""
        return self.add(name, race=True, **options)


class ProbeError(Exception):
    """Something about the submission the probe could not measure; its text is feedback."""


class StudentImportError(Exception):
    def __init__(self, record):
        super().__init__(record["message"])
        self.record = record


@contextmanager
def kits_part(module, name, replacement):
    """The kit's own ``replacement`` in place of the student's ``name`` in their ``module`` while the block runs
    (a twin's run, ``Check.twin``, or a check of one function measured with the kit's version of another it
    calls): yields the list of its calls, so that a run that never called it can say so rather than name the
    wrong part. The student's own is put back however the block ends."""
    own, calls = getattr(module, name), []

    def counted(*args, **kwargs):
        calls.append(1)
        return replacement(*args, **kwargs)

    setattr(module, name, counted)
    try:
        yield calls
    finally:
        setattr(module, name, own)


class Lab:
    """Lazy access to the student's modules: ``lab.causal`` imports ``attention_lab.causal``.

    An import that failed once is not retried: every probe that needs it gets the same record.
    """

    def __init__(self, root: Path):
        self.root = Path(root).resolve()  # where the student's files are: error records name lines in them
        self._failed: dict = {}

    def __getattr__(self, name):
        if name.startswith("_"):
            raise AttributeError(name)
        return self.load(name)

    def load(self, name):
        if name in self._failed:
            raise StudentImportError(self._failed[name])
        if not (self.root / "attention_lab" / f"{name}.py").is_file():
            record = problem("NotHandedIn", f"{name}.py was not handed in", importing=f"attention_lab/{name}.py")
            self._failed[name] = record
            raise StudentImportError(record)
        try:
            return importlib.import_module(f"attention_lab.{name}")
        except BaseException as exc:  # SyntaxError, ImportError, NameError, SystemExit, ...
            record = error_record(exc, self.root / "attention_lab", importing=f"attention_lab/{name}.py")
            self._failed[name] = record
            raise StudentImportError(record) from None

    def attempt(self, fn, *args, **kwargs):
        """Run one measurement; an exception becomes an error record instead of ending the probe.

        BaseException too: ``sys.exit``, ``pytest.skip`` or ``pytest.exit`` raised by the student's
        code fail the measurement; they can neither end the child nor skip a check.
        """
        try:
            return fn(*args, **kwargs)
        except StudentImportError as exc:
            return {"error": exc.record}
        except ProbeError as exc:
            return {"error": problem("ProbeError", str(exc))}
        except BaseException as exc:
            return {"error": error_record(exc, self.root / "attention_lab")}

    def mark_broken(self, name, message):
        self._failed[name] = problem("Crash", message, importing=f"attention_lab/{name}.py")

    def mark_left_out(self, name, why):
        """The module's file was handed in as something intake does not read (a link, a FIFO): ``why``."""
        self._failed[name] = problem("NotHandedIn", f"{name}.py was not handed in: {why}",
                                     importing=f"attention_lab/{name}.py", why=why)


def plain(t, what="the result"):
    """A student's tensor as a detached CPU copy of exact type torch.Tensor, or a ProbeError."""
    if not isinstance(t, torch.Tensor):
        raise ProbeError(f"{what} should be a torch.Tensor but is a {type(t).__name__}")
    if type(t) is not torch.Tensor:
        raise ProbeError(f"{what} is a tensor subclass ({type(t).__name__}), not a plain torch.Tensor")
    t = t.detach()
    if t.device.type == "meta":
        raise ProbeError(f"{what} is on the meta device and has no values")
    return t.cpu().clone()


def meta_summary(t, what="the output"):
    if type(t) is not torch.Tensor:
        raise ProbeError(f"{what} should be a plain torch.Tensor but is a {type(t).__name__}")
    return {"shape": list(t.shape), "dtype": str(t.dtype).replace("torch.", ""), "device": t.device.type}


def generator(seed):
    return torch.Generator().manual_seed(seed)


def randn(*shape, seed, scale=1.0):
    return torch.randn(*shape, generator=generator(seed)) * scale


def load_by_name(module, weights, spare_biases=False):
    """Copy known values into the parameters named in ``weights`` (e.g. ``"W_query.weight"``).

    Looking weights up by name judges the forward pass apart from the order in which
    ``__init__`` created (and randomly initialised) them.

    ``spare_biases``: which projections have a bias is not what the calling check is about, because
    a structure check of the same layer judges it (each concept is priced once, in the check about it;
    docs/checks.md). True for every ``nn.Linear``, or the names of the layers meant (``("out_proj",)``,
    matched as the end of a layer's path). So a spared ``nn.Linear`` of the student's that lacks a bias the
    weights name is given it, and one with a bias the weights do not name gets a zero bias: the check then
    measures its own concept on the layer as the contract would have it, instead of failing for a missing
    piece.
    """
    named = set(weights)
    for name, value in weights.items():
        owner, own = _students(module, name)
        try:
            param = module.get_parameter(name)
        except AttributeError:
            if _spared(name.rpartition('.')[0], spare_biases) and _give_bias(module, name, value):
                continue
            raise ProbeError(f"{type(owner).__name__} has no parameter named {own!r}") from None
        if tuple(param.shape) != tuple(value.shape):
            raise ProbeError(
                f"{type(owner).__name__}.{own} has shape {tuple(param.shape)}, expected {tuple(value.shape)}"
            )
        with torch.no_grad():
            param.copy_(value.to(param.device, param.dtype))
    if spare_biases:
        for prefix, sub in module.named_modules():
            if (isinstance(sub, nn.Linear) and isinstance(sub.bias, torch.Tensor) and _spared(prefix, spare_biases)
                    and f"{prefix}.weight" in named and f"{prefix}.bias" not in named):
                with torch.no_grad():
                    sub.bias.zero_()
    return module


def _spared(layer, spare_biases):
    if spare_biases is True:
        return True
    return any(layer == n or layer.endswith("." + n) for n in spare_biases or ())


def _give_bias(module, name, value):
    """Give the ``nn.Linear`` that ``name`` (``"out_proj.bias"``) belongs to the bias it lacks, set
    to ``value``; False where ``name`` is not the missing bias of an ``nn.Linear``."""
    prefix, _, leaf = name.rpartition(".")
    try:
        linear = module.get_submodule(prefix)
    except AttributeError:
        return False
    if leaf != "bias" or not isinstance(linear, nn.Linear) or linear.bias is not None:
        return False
    if tuple(value.shape) != (linear.out_features,):
        return False
    linear.bias = nn.Parameter(value.to(linear.weight.device, linear.weight.dtype))
    return True


def _students(module, name):
    """The student's layer and the parameter's name in it, through the probes' own wrappers (a
    wrapper names its attribute that holds the student's layer in ``WRAPS``): feedback names the
    student's class, never the kit's."""
    while getattr(type(module), "WRAPS", None) and name.startswith(type(module).WRAPS + "."):
        module, name = getattr(module, type(module).WRAPS), name[len(type(module).WRAPS) + 1:]
    return module, name


def linear_weights(prefix, d_in, d_out, seed, bias):
    """Known weights of an nn.Linear(d_in, d_out) called ``prefix``."""
    w = {f"{prefix}.weight": randn(d_out, d_in, seed=seed, scale=0.5)}
    if bias:
        w[f"{prefix}.bias"] = randn(d_out, seed=seed + 1, scale=0.1)
    return w


def qkv_weights(d_in, d_out, seed, bias, prefix=""):
    weights = {}
    for i, name in enumerate(("W_query", "W_key", "W_value")):
        weights.update(linear_weights(prefix + name, d_in, d_out, seed + 10 * i, bias))
    return weights


def forward(module, x):
    # Every call gets its own copy: an in-place edit of x must not leak into later probes.
    return plain(module(x.clone()), "the output of forward")


def drawn_parameters(build):
    """The parameters of a layer built right after its seed (``build`` seeds it), in the order it registered
    them, which is the order ``__init__`` drew them in unless it assigned them out of order. The seeded
    checks' judges draw them again from the seed (``judging.creation_order``) to tell weights created in
    another order from a wrong forward pass. At most 16 parameters: the seeded layers have 3 to 12."""
    drawn = list(build().named_parameters())[:16]
    return [[name, plain(value.detach(), f"the parameter {name}")] for name, value in drawn]


def seen_weights(build, x, device):
    """The attention weights a freshly built layer computes for ``x`` (the book's sentence), for the
    pictures of a report: no check judges them, and a layer whose weights cannot be seen only
    goes without a picture. On cpu only: a picture needs values."""
    if device != "cpu":
        return None
    _, weights = attention_of(build().to(device).eval(), x.clone())
    if weights is None:
        raise ProbeError("no attention weights could be seen (no softmax over a square matrix of scores)")
    return plain(weights, "the attention weights")


def shape_report(build, cfg, device, dtype=torch.float32):
    """Build a module (or a function: a callable seen as a layer) from ``cfg`` and record what it returns
    for ``cfg['x']``, or, for a callable of several tensors, for ``cfg['inputs']`` (name -> shape, passed in
    that order)."""
    called = build(cfg)
    if "inputs" not in cfg or isinstance(called, nn.Module):  # a layer of x is a module: .to() it must have
        called = called.to(device, dtype).eval()  # dtype follows the input when the module is converted too
    shapes = cfg["inputs"] if "inputs" in cfg else {"x": cfg["x"]}
    inputs = {name: randn(*shape, seed=7 + i).to(device, dtype) for i, (name, shape) in enumerate(shapes.items())}
    before = {name: t.clone() for name, t in inputs.items()}
    summary = meta_summary(called(*inputs.values()))
    if device != "meta":  # compared by the judge, with a torch the student cannot patch
        summary["inputs_after"] = {n: plain(t, f"the input {n}") for n, t in inputs.items()}
        summary["inputs_before"] = {n: plain(t, f"the input {n}") for n, t in before.items()}
    return summary


def shape_reports(lab, build, configs, device):
    reports = []
    for cfg in configs:
        for dtype in (torch.float32, torch.float64) if cfg.get("dtypes") else (torch.float32,):
            r = lab.attempt(shape_report, build, cfg, device, dtype)
            reports.append({"config": cfg["name"], "dtype_in": str(dtype).replace("torch.", ""),
                            "device_in": torch.device(device).type, "result": r})
    return reports


def leak_report(module, d_in, num_tokens, device):
    """How much earlier outputs move when later tokens change, and the Jacobian's block norms, of a layer
    or of a function of ``x`` alone (a function seen as a layer: ``lambda x: attend(x, x, x)``).

    ``moved[t]``: largest change of any output before position t when every input from t on is
    perturbed. ``jacobian[t, s]``: largest |d out[t] / d x[s]|; causal means zero for s > t.
    """
    if isinstance(module, nn.Module):
        module = module.to(device).eval()
    x = randn(2, num_tokens, d_in, seed=11).to(device)
    base = plain(module(x.clone()))
    moved = torch.zeros(num_tokens)
    for t in range(1, num_tokens):
        x2 = x.clone()
        x2[:, t:] += randn(2, num_tokens - t, d_in, seed=100 + t, scale=10.0).to(device)
        out = plain(module(x2))
        moved[t] = (out[:, :t] - base[:, :t]).abs().max()
    x1 = x[:1]
    jac = torch.autograd.functional.jacobian(lambda inp: module(inp), x1)
    jac = plain(jac, "the Jacobian")  # (1, T, d_out, 1, T, d_in)
    blocks = jac[0, :, :, 0].abs().amax(dim=(1, 3))  # (T, T): output t, input s
    return {"moved": moved, "jacobian": blocks, "scale": float(base.abs().max())}


DROPOUT_P = 0.2  # not 0.5, where 1/p and 1/(1-p) are the same number
DROPOUT_TOKENS = 32
DROPOUT_BATCH = 48


def dropout_weights(num_tokens, prefix="", names=("W_query", "W_key", "W_value"), square=False):
    """Weights that make the output show the attention weights themselves.

    Queries and keys are zero, so every causal row of weights is uniform: 1/(t+1).
    With one-hot tokens and W_value = [identity; ones], output column j (j < T) is the
    weight on token j and the last column is the row's total: if dropout acts on the
    weights the last column is exactly the sum of the others; if it acts on the outputs,
    it is not. ``square``: for layers that map dim to dim, the tokens get one more input
    column (always 0) and every projection has a zero bias.
    """
    T = num_tokens
    width = T + 1 if square else T
    value = torch.zeros(T + 1, width)
    value[:T, :T] = torch.eye(T)
    value[T, :T] = 1
    query, key, value_name = names
    zeros = torch.zeros(T + 1, width)
    weights = {f"{prefix}{query}.weight": zeros, f"{prefix}{key}.weight": zeros, f"{prefix}{value_name}.weight": value}
    if square:
        weights.update({f"{prefix}{n}.bias": torch.zeros(T + 1) for n in names})
    return weights


def dropout_report(module, device, train=True, seed=0, width=DROPOUT_TOKENS, mask=None):
    """``module`` on one-hot tokens (``width`` columns, see ``dropout_weights``), with ``mask``
    as its second argument when given, in train mode under a fixed seed."""
    module = module.to(device)
    module.train(train)
    x = torch.eye(DROPOUT_TOKENS, width).expand(DROPOUT_BATCH, -1, -1).contiguous().to(device)
    torch.manual_seed(seed)
    out = module(x) if mask is None else module(x, mask.to(device))
    return plain(out, "the output of forward in train mode")


def dropout_pair(module, x, device, seed=0):
    """``module`` on ``x`` in train mode under a fixed seed, and the same module's output in eval mode on the
    same input: the intermediate a probe arranges the output to show (``x + pe``, a hidden layer), with and
    without dropout. Judged against the layer's own eval output, so that a mistake in computing the
    intermediate itself costs nothing here (``judging.check_inverted_dropout``)."""
    module = module.to(device)
    undropped = plain(module.eval()(x.to(device).clone()), "the output of forward in eval mode")
    torch.manual_seed(seed)
    return {"train": plain(module.train()(x.to(device).clone()), "the output of forward in train mode"),
            "eval": undropped}


def eval_report(build, weights, device, d_in=5, spare_biases=False):
    """Eval mode: two calls agree, and p > 0 gives what p = 0 gives with the same weights
    (loaded by ``load_by_name``, with ``spare_biases``)."""
    x = randn(2, 6, d_in, seed=21).to(device)
    outs = {}
    for name, p in (("dropout", DROPOUT_P), ("no_dropout", 0.0)):
        m = load_by_name(build(p), weights, spare_biases).to(device).eval()
        torch.manual_seed(1)
        first = plain(m(x.clone()))
        torch.manual_seed(2)
        outs[name] = [first, plain(m(x.clone()))]
    other = plain(m(randn(2, 6, d_in, seed=22).to(device)))  # a different input must change the output
    return {"first": outs["dropout"][0], "second": outs["dropout"][1], "p0": outs["no_dropout"][0],
            "other_input": other}


def gradient_report(module, x):
    module.train(False)
    out = module(x.clone())
    if type(out) is not torch.Tensor:
        raise ProbeError("forward should return a plain torch.Tensor")
    if not out.requires_grad:
        raise ProbeError("the output of forward depends on no parameter (it carries no gradient at all): is forward "
                         "returning a new tensor, such as zeros, or computing under torch.no_grad()?")
    out.square().sum().backward()
    return {name: (p.grad is not None and bool(p.grad.abs().sum() > 0))
            for name, p in module.named_parameters()}


class DeviceTrace(TorchDispatchMode):
    """Which ops met a tensor on another device while a module ran on ``device``: a mask that stayed
    behind, or a tensor made in forward on a fixed device. Judging that by where the tensors are, not
    by whether an op raised, keeps the verdict off the quirks of one kernel: on ``meta`` an in-place
    ``masked_fill_`` with a CPU mask does not raise, on CUDA it does; the lesson is the same."""

    MOVES = {torch.ops.aten._to_copy.default, torch.ops.aten.copy_.default, torch.ops.aten.lift_fresh.default}
    INDEXING = {torch.ops.aten.index.Tensor, torch.ops.aten.index_put.default, torch.ops.aten.index_put_.default,
                torch.ops.aten._index_put_impl_.default}  # indices on the CPU are allowed, as CUDA allows them

    def __init__(self, device):
        super().__init__()
        self.device = torch.device(device).type
        self.strays = []  # "aten.masked_fill_ with a tensor on cpu", in the order met

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        if func in self.MOVES:
            source = args[1] if func is torch.ops.aten.copy_.default else args[0]
            target = args[0].device.type if func is torch.ops.aten.copy_.default else kwargs.get("device")
            target = torch.device(target).type if target is not None else source.device.type
            if source.device.type == self.device and target != self.device:
                self._note(f"{func.overloadpacket} moved a tensor to {target}")
        else:
            given = (args[0], *args[2:]) if func in self.INDEXING else args
            tensors = [t for t in pytree.tree_leaves((given, kwargs)) if isinstance(t, torch.Tensor) and t.dim() > 0]
            elsewhere = sorted({t.device.type for t in tensors} - {self.device})
            if elsewhere and len(elsewhere) < len({t.device.type for t in tensors}):
                self._note(f"{func.overloadpacket} with a tensor on {', '.join(elsewhere)}")
        return func(*args, **kwargs)

    def _note(self, what):
        if what not in self.strays and len(self.strays) < 5:
            self.strays.append(what)


def left_behind(module, device):
    """Tensors of ``module`` (and its submodules) that are not on ``device``: plain tensor attributes,
    which ``.to()`` does not move, or anything the module keeps elsewhere."""
    target = torch.device(device).type
    found = []
    for prefix, sub in module.named_modules():
        for name, value in vars(sub).items():
            if isinstance(value, torch.Tensor) and value.device.type != target:
                found.append(f"{prefix}.{name}" if prefix else name)
        found += [f"{prefix}.{n}" if prefix else n for n, t in [*sub._parameters.items(), *sub._buffers.items()]
                  if isinstance(t, torch.Tensor) and t.device.type != target]
    return sorted(found)


def device_report(lab, build, weights, device, d_in, spare_biases=False):
    """Move a module to ``device``: where do its tensors go, and what does forward meet there?
    (``weights`` loaded by ``load_by_name``, with ``spare_biases``.) Each tensor the module holds itself
    other than its parameters (a buffer, or a plain attribute) is reported by name: a registered buffer or
    not, and where it went. The judge looks up the names the layer's contract keeps as buffers
    (``judging.check_device``)."""
    module = load_by_name(build(), weights, spare_biases)
    x = randn(2, 5, d_in, seed=31)
    module.eval()
    # Its own numbers on the CPU, to compare with the device's; code that fails here is the numeric checks' to judge.
    reference = lab.attempt(lambda: plain(module(x.clone()))) if device != "meta" else None
    module.to(device)
    registered = dict(module.named_buffers(recurse=False))
    held = {**{n: t for n, t in vars(module).items() if isinstance(t, torch.Tensor)}, **registered}
    report = {
        "buffers": {name: {"is_buffer": name in registered, "device": t.device.type} for name, t in held.items()},
        "left_behind": left_behind(module, device),
    }
    trace = DeviceTrace(device)

    def run():
        with trace:
            out = module(x.to(device).clone())
        summary = meta_summary(out)
        if device != "meta" and not is_error_record(reference):
            summary["out"], summary["cpu_out"] = plain(out), reference
        return summary

    report["forward"] = lab.attempt(run)
    report["strays"] = trace.strays
    return report


def state_dict_report(build, device, d_in, buffer="mask", tokens=None):
    """Change the buffer named ``buffer``, save the state_dict on ``device``, load it on the CPU into a
    fresh module: a reloaded module gives the changed module's output only if the change came back.

    A ``mask`` (the causal layers') has one entry changed: token 0 hidden from the last token (any dtype
    of mask: set that entry to 1/True), on as many tokens as the mask is long. A mask that hides it
    already (the wrong way round, which ``mask_buffer`` prices) shows it instead (``flipped_to`` 0): the
    change must make a difference, or the check would blame the buffer. Any other buffer, on ``tokens``
    tokens: a floating one (a table, a bias) is shifted by one everywhere; an integer or bool one (indices,
    a pattern) is reversed along its last dimension, which keeps every index in range.
    """
    module = build().to(device).eval()
    held = getattr(module, buffer, None)
    if not isinstance(held, torch.Tensor):
        raise ProbeError(f"the module has no tensor attribute named {buffer!r}")
    flipped = None
    if buffer == "mask":
        tokens = held.shape[0]
        flipped = 0 if bool(held[tokens - 1, 0] != 0) else 1
    x = randn(2, tokens, d_in, seed=41)
    before = plain(module(x.to(device).clone()))
    with torch.no_grad():
        if flipped is None and held.is_floating_point():
            held += 1
        elif flipped is None:
            held.copy_(held.flip(-1))
        else:
            held[tokens - 1, 0] = flipped
    changed = plain(module(x.to(device).clone()))
    buf = io.BytesIO()
    torch.save(module.state_dict(), buf)
    buf.seek(0)
    fresh = build().eval()
    fresh.load_state_dict(torch.load(buf, map_location="cpu", weights_only=True))
    reloaded = getattr(fresh, buffer, None)
    return {
        "keys": sorted(module.state_dict().keys()),
        "changed_buffer": plain(held),
        "reloaded_buffer": plain(reloaded) if isinstance(reloaded, torch.Tensor) else None,
        "reloaded_out": plain(fresh(x.clone())),
        "changed_out": changed,
        "before_change_out": before,
        "flipped_to": flipped,
    }


def padding_report(run, x, padded, mask, all_padded):
    """Outputs with padding, before and after the padded positions of ``x`` are replaced by junk.

    ``run(x, mask)`` returns the output; ``padded``: (batch, seq) bool, True where x holds padding.
    Only the outputs of real tokens are comparable: a padded query's own output depends on its
    own (junk) input. ``all_padded``: a mask with a sequence that is nothing but padding.
    """
    junk = x.clone()
    junk[padded] = randn(int(padded.sum()), x.shape[-1], seed=64, scale=100.0)
    return {"clean": run(x, mask), "junk": run(junk, mask), "all_padded": run(x, all_padded)}


def raised(make, any_error=False):
    """Which of ValueError / AssertionError ``make()`` raised ("" for none), and its message.

    Other exceptions (a stub's NotImplementedError, a crash) propagate to ``lab.attempt``; with
    ``any_error``, every exception but NotImplementedError is recorded the same way (where the
    likely wrong answer is an error of another type, such as an index out of range)."""
    try:
        make()
    except NotImplementedError:
        raise
    except (ValueError, AssertionError) as exc:
        return {"raised": type(exc).__name__, "message": str(exc)[:300]}
    except Exception as exc:
        if not any_error:
            raise
        return {"raised": type(exc).__name__, "message": str(exc)[:300]}
    return {"raised": "", "message": ""}
