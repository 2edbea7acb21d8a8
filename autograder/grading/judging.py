"""Helpers the judges share: unwrap observations, compare numbers, describe errors."""
from __future__ import annotations

import re

import torch

from ..curriculum import STAGE_OF
from ..public.book import PRINTED
from ..public.feedback import describe_error, describe_mismatch, describe_row_sums, is_error_record
from .registry import Fail
from .results import Cause

BIAS_CASES = {"no_bias": "qkv_bias=False", "bias": "qkv_bias=True"}
ATOL = 1e-5  # float32 against the float32 reference: differences of rounding only
RTOL = 1e-4
LEAK_LIMIT = 1e-6  # |d out[t] / d x[s]| relative to the largest: more than this is a leak (judges and pictures)


def described(record):
    """An error record in the student's words (``feedback.describe_error``); a module that was not
    handed in names its stage."""
    module = record.get("importing", "").removeprefix("attention_lab/").removesuffix(".py")
    if record.get("type") == "NotHandedIn" and module in STAGE_OF:
        why = record.get("why")
        return f"stage {STAGE_OF[module]} ({module}.py) was not handed in" + (f": {why}" if why else "")
    return describe_error(record)


def cause_of(record) -> Cause:
    """Why an error record fails a check: code never written (the stub's NotImplementedError, a module
    not handed in), time run out, or the student's code itself."""
    if record.get("not_implemented") or record.get("type") == "NotHandedIn":
        return Cause.UNTOUCHED
    return Cause.TOO_SLOW if record.get("type") == "Timeout" else Cause.STUDENT


def failure(record, before="", after="") -> Fail:
    """The ``Fail`` of an error record: its description (``before`` and ``after`` around it) and its cause."""
    return Fail(f"{before}{described(record)}{after}", cause=cause_of(record))


DEVICE_MISMATCH = re.compile(r"same device|Expected all tensors to be on|device type cuda but got", re.I)


def nodes(obs):
    """``obs`` and everything in it, depth first: each dict, list and value of an observation."""
    yield obs
    for child in obs.values() if isinstance(obs, dict) else obs if isinstance(obs, (list, tuple)) else ():
        yield from nodes(child)


def device_mismatch(obs):
    """The first error recorded in ``obs`` that is torch refusing to mix devices, else None."""
    for node in nodes(obs):
        record = node.get("error") if isinstance(node, dict) else None
        if isinstance(record, dict) and DEVICE_MISMATCH.search(str(record.get("message", ""))):
            return str(record["message"]).splitlines()[0][:200]
    return None


def forward_failure(out, device, what):
    """A device check's look at a forward that ran on ``device``: None when it ran. An error costs points
    only when torch refused to mix devices on a real device: on ``meta`` an op may lack a kernel, or run
    where CUDA would refuse (an in-place fill with a CPU mask), and any other error (a wrong shape) is the
    numeric checks' to judge, so that the same code gets the same points with or without a GPU. Returns
    the note of a forward that could not run and costs nothing."""
    if not is_error_record(out):
        return None
    if device == "meta" or not device_mismatch(out):
        return f"{what}.forward could not run on {device} ({described(out['error'])}); judged by where its tensors went"
    raise failure(out["error"])


def get(obs, *keys):
    """``obs[k1][k2]...``, failing with the student-facing description of any error on the way."""
    for key in (None, *keys):
        if key is not None:
            obs = obs[key]
        if is_error_record(obs):
            raise failure(obs["error"])
    return obs


def holds_error(obs) -> bool:
    """Whether an error record is anywhere in ``obs``: a run that did not complete."""
    return any(is_error_record(node) for node in nodes(obs))


def naming_the_part(obs, ctx, judge, part, stage=None, own="this stage's code"):
    """A check of code that calls another ``part`` the student wrote (of ``stage``, if another), judged by
    ``judge(o)``, which raises ``Fail``. Where it fails, the check's twin (``ctx.twin``: the same run with
    the kit's own ``part`` in place of the student's; ``Check.twin``) is judged alike, to say where the
    mistake is: in the student's ``part``, or, where the twin fails too, in their ``own`` code (both may be
    wrong). A twin that did not run, or did not complete (an error anywhere in it: a model that keeps its
    blocks elsewhere, a cache of its own form, code that never called the part), adds nothing."""
    try:
        judge(obs)
    except Fail as failed:
        twin = ctx.twin
        if not isinstance(twin, dict) or holds_error(twin):
            raise
        said, where = str(failed).rstrip(". "), f"your {part}" + (f" (stage {stage})" if stage else "")
        try:
            judge(twin)
        except Fail:
            raise Fail(f"{said}. With the kit's {part} in place of yours, this still fails, so there is a mistake "
                       f"in {own}", failed.cause) from None
        except Exception:  # a twin the judge cannot read says nothing, as one that did not run
            raise failed from None
        raise Fail(f"{said}. With the kit's {part} in place of yours, this passes: the mistake is in {where}; "
                   "look there first", failed.cause) from None


LAYER = torch.float32  # what the probes feed layers: a layer's output keeps its input's dtype


def expect_close(actual, expected, what, atol=ATOL, rtol=RTOL, reveal=False, dtype=None):
    """``actual`` equals ``expected`` up to rounding; with ``dtype``, it also has that dtype (a layer's
    output: a float64 table or constant inside it would make every layer after it float64, or fail)."""
    if dtype is not None and actual.dtype != dtype:
        raise Fail(f"{what} has dtype {str(actual.dtype).replace('torch.', '')} for an input of dtype "
                   f"{str(dtype).replace('torch.', '')}; a layer's output keeps its input's dtype")
    problem = describe_mismatch(actual, expected, what, atol=atol, rtol=rtol, reveal=reveal)
    if problem:
        raise Fail(problem)


def expect_book(actual, printed, what, dtype=None, public=True):
    """Against the chapter's printed numbers, to the printed precision: public, so the expected values are
    shown. ``public=False``: an expected output that is not public (the reference's, from golden data),
    compared to rounding and never shown."""
    expect_close(actual, printed, what, atol=PRINTED if public else ATOL, rtol=0 if public else RTOL,
                 reveal=public, dtype=dtype)


def expect_book_batch(obs, printed, call, public=True):
    """The book's batch is two copies of the inputs: both outputs are the printed numbers."""
    out = get(obs, "out")
    expect(out.dim() == 3 and out.shape[0] == 2,
           f"{call} has shape {tuple(out.shape)}, expected (2, 6, {printed.shape[-1]})")
    for b in range(2):
        expect_book(out[b], printed, f"{call}[{b}]", dtype=LAYER, public=public)


def expect_seeded(obs, printed, call, seed, order, batch=True, owns_widths=False, public=True):
    """The book's printed output of a layer made right after ``torch.manual_seed(seed)``; where it is not,
    and the layer's weights are what the seed draws in another order than the book's ``order`` of its
    projections, the feedback says so first: that is the cause, not the forward pass. ``public=False``: the
    expected output is the reference's (golden data), judged to rounding and never shown."""
    try:
        if batch:
            expect_book_batch(obs, printed, call, public)
        else:
            expect_book(get(obs, "out"), printed, call, LAYER, public)
    except Fail as failed:
        try:
            drawn, out = obs["drawn"], obs["out"]
        except (KeyError, TypeError, IndexError):
            drawn = out = None
        said = creation_order(drawn, seed, order)
        if said:
            raise Fail(f"{said}. {failed}") from None
        if owns_widths and is_error_record(out) and not out["error"].get("not_implemented"):
            raise Fail(f"{failed}. The book's example maps d_in=3 to d_out=2: the contract's layer takes both "
                       "widths, where model code often maps one width to itself; every other check of the layer "
                       "is measured with d_in == d_out") from None
        raise


def creation_order(drawn, seed, order):
    """A sentence naming the order in which a layer created its projections, when its parameters
    (``drawn``: [name, tensor] in the order the layer registered them) are exactly what
    ``torch.manual_seed(seed)`` draws in that order and it is not the book's ``order`` (leaf names such
    as ``("W_query", "W_key", "W_value")``, within each sublayer); else None. Drawn again here, in the
    grading process: nothing the student's code says about itself decides it."""
    try:
        params = [(str(name), value) for name, value in drawn]
        if not params or not all(isinstance(v, torch.Tensor) and v.dtype == torch.float32 for _, v in params):
            return None
    except (TypeError, ValueError):
        return None
    layers = {}  # a projection's path -> its tensors, in order
    for name, value in params:
        path, _, leaf = name.rpartition(".") if name.endswith((".weight", ".bias")) else (name, "", "")
        layers.setdefault(path, {})[leaf] = value
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        for tensors in layers.values():
            if "" in tensors:  # a bare parameter, as SelfAttention_v1 makes: torch.rand
                again = {"": torch.rand(tensors[""].shape)}
            elif tensors.get("weight") is not None and tensors["weight"].dim() == 2:
                linear = torch.nn.Linear(*tensors["weight"].shape[::-1], bias="bias" in tensors)
                again = {leaf: getattr(linear, leaf).detach() for leaf in tensors}
            else:
                return None
            if set(again) != set(tensors) or not all(
                    again[leaf].shape == tensors[leaf].shape and torch.equal(again[leaf], tensors[leaf])
                    for leaf in tensors):
                return None
    made = {}  # a sublayer ("" or "heads.0") -> its projections, in the order made
    for path in layers:
        owner, _, leaf = path.rpartition(".")
        if leaf in order:
            made.setdefault(owner, []).append(leaf)
    for owner, leaves in made.items():
        book = [leaf for leaf in order if leaf in leaves]
        if leaves != book:
            whose = f"{owner}'s weights" if owner else "its weights"
            return (f"Your layer creates {whose} in the order {', '.join(leaves)}, and the book in the "
                    f"order {', '.join(book)}: under torch.manual_seed({seed}) another order draws other numbers, "
                    "so the printed output cannot come out (the known-weights checks judge the forward pass apart "
                    "from this order)")
    return None


def expect_golden(obs, golden, cases, what):
    """Known-weights outputs against the reference's: ``cases`` maps observation keys to labels."""
    for key, label in cases.items():
        expect_close(get(obs, key), golden[key], f"{what} output ({label})", dtype=golden[key].dtype)


def expect_rows_sum_to_one(weights, what):
    problem = describe_row_sums(weights, what)
    if problem:
        raise Fail(problem)


def expect(condition, message):
    if not condition:
        raise Fail(message)


# The student's tensors may have any shape, dtype and values: these compare them without raising.

def same(a, b):
    """Exactly equal: the same shape, dtype and values."""
    return a.shape == b.shape and a.dtype == b.dtype and bool(torch.equal(a, b))


def close(a, b, atol=ATOL, rtol=RTOL, equal_nan=False):
    """Equal up to rounding, compared in float64; tensors of different shapes are not close."""
    return a.shape == b.shape and bool(torch.allclose(a.double(), b.double(), atol=atol, rtol=rtol,
                                                      equal_nan=equal_nan))


def expect_form(got, what, shape, dtype):
    """``got`` (a tensor the student's code returned) has ``shape`` and ``dtype`` (a ``torch.dtype``, or its
    name), said in the student's terms: checked before its values, so that a wrong shape or dtype is named
    as itself and not as every value being off."""
    expect(tuple(got.shape) == tuple(shape), f"{what} has shape {tuple(got.shape)}, expected {tuple(shape)}")
    have, want = (str(d).removeprefix("torch.") for d in (got.dtype, dtype))
    expect(have == want, f"{what} has dtype {have}, expected {want}")


def name_the_mistake(got, expected, mistakes, what):
    """Fail naming the usual mistake ``got`` is the result of, if it is one: ``mistakes`` are pairs (what the
    student did, the result that code gives on the same inputs, computed by the judge), tried in order
    (nan where the result has nan). A mistake whose result is the ``expected`` one on these inputs is no
    mistake here, and is passed over. A check calls it before comparing with the expected values, so that
    the feedback says the cause rather than how far off the numbers are."""
    for said, result in mistakes:
        if close(got, result, equal_nan=True) and not close(result, expected, equal_nan=True):
            raise Fail(f"{what}: {said}")


def check_shapes(obs, configs, expected_shape):
    """Judge ``shape_reports``: shape, dtype and device follow the input; input untouched."""
    by_name = {c["name"]: c for c in configs}
    reports = get(obs, "reports")
    for report in reports:
        expect(report["config"] in by_name,
               f"the shape report names a configuration the grader did not make: {report['config']!r}")
    # The cases where d_in != d_out come last, and a failure there says so: this check is where a layer
    # that maps one width to itself (as model code writes them) pays for it, once (docs/checks.md).
    for report in sorted(reports, key=lambda r: _unequal_widths(by_name[r["config"]])):
        cfg = by_name[report["config"]]
        try:
            _check_shape_report(report, cfg, expected_shape)
        except Fail as failed:
            if not _unequal_widths(cfg):
                raise
            raise Fail(f"{failed}. This case maps d_in={cfg['d_in']} to d_out={cfg['d_out']}: the contract's layer "
                       "takes both widths, as the book's do, where model code often maps one width to itself, so "
                       "its projections are nn.Linear(d_in, ...) and everything after them is d_out wide") from None


def _unequal_widths(cfg):
    return "d_in" in cfg and "d_out" in cfg and cfg["d_in"] != cfg["d_out"]


def _check_shape_report(report, cfg, expected_shape):
    label = f"{report['config']} ({report['dtype_in']} input)"
    result = get(report, "result")  # an error record there fails the check, in get
    want = expected_shape(cfg)
    expect(result["shape"] == want, f"{label}: output shape is {tuple(result['shape'])}, expected {tuple(want)}")
    expect(result["dtype"] == report["dtype_in"],
           f"{label}: output dtype is {result['dtype']}; it should follow the input's dtype")
    expect(result["device"] == report["device_in"],
           f"{label}: output is on {result['device']} for an input on {report['device_in']}")
    if "inputs_after" in result or "inputs_before" in result:  # not on meta, where no value is measured
        who = "it" if "inputs" in cfg else "forward"  # a callable of several tensors, or a layer of x
        for name in cfg.get("inputs", ("x",)):  # the names are the contract's, never the report's
            after, before = result.get("inputs_after", {}).get(name), result.get("inputs_before", {}).get(name)
            expect(after is not None and before is not None and same(after, before),
                   f"{label}: {who} modified its input {name} in place; work on new tensors")


def check_leak(obs, what):
    leak = get(obs)
    moved, jac = leak["moved"], leak["jacobian"]
    tokens = moved.shape[0] if moved.dim() == 1 else 0
    expect(tokens > 1 and tuple(jac.shape) == (tokens, tokens), f"{what}: its output for {tokens or 'several'} tokens "
           f"does not have one row per token (the gradient of the outputs by the inputs is {tuple(jac.shape)}), "
           "so causality could not be measured; check the output's shape")
    moved, jac = moved.double(), jac.double()
    expect(bool(moved.isfinite().all() and jac.isfinite().all()),
           f"{what} gives nan or inf, so whether a token sees later tokens could not be measured")
    tol = 1e-5 * max(1.0, leak["scale"])
    bad = (moved > tol).nonzero()
    if len(bad):
        t = int(bad[0])
        raise Fail(f"{what}: changing tokens {t} and later changed the output at an earlier position "
                   f"(by up to {moved[t].item():.3g}); a token must not see the tokens after it")
    future = torch.triu(torch.ones_like(jac, dtype=torch.bool), diagonal=1)
    # Exactly zero for a -inf/-1e9 fill; multiply-and-renormalise leaves float rounding (~1e-8).
    limit = LEAK_LIMIT * max(float(jac.max()), 1e-12)
    if (jac[future] > limit).any():
        t, s = (future & (jac > limit)).nonzero()[0].tolist()
        raise Fail(f"{what}: the output at position {t} has a nonzero gradient with respect to input {s} "
                   f"(|d out[{t}] / d x[{s}]| = {jac[t, s].item():.3g}); it must be 0 for every later token")
    expect(float(jac.diagonal().min()) > 0, f"{what}: the output at some position does not depend on its own token")


def hidden_too_much(weights, visible):
    """What a mask hides that it should not, in words, from attention weights of shape (batch, T, T)
    after dropout (``visible``: (T, T), True where a query may see a key); "" when nothing. A weight that
    is 0 in every sequence of the batch was hidden, not dropped (dropout keeps each with probability 1-p)."""
    if weights.dim() != 3 or 0 in weights.shape:
        return ""
    finite = weights.isfinite()
    if not bool(finite.all()):
        nan_rows = (~finite).any(dim=-1)  # (batch, T)
        t = int(nan_rows.any(dim=0).nonzero()[0])
        if not bool((nan_rows == nan_rows[0]).all()):  # random: made by dropout, not by the mask
            return (f"row {t} of the attention weights is nan in some sequences and not in others, so dropout "
                    "makes it: dropout acts before the softmax, on the scores (a dropped -inf is -inf * 0 = nan); "
                    "it belongs on the weights, after the softmax")
        return (f"row {t} of the attention weights is nan in every sequence: every key it may see is hidden, so its "
                f"softmax has nothing to share out (the mask hides too much; token {t} must see "
                + (f"tokens 0 to {t}, itself included" if t else "itself") + ": is the diagonal hidden too?)")
    never = visible & (weights == 0).all(dim=0)
    if bool(never.any()) and not bool(never[visible].all()):  # all hidden: another message (forward gives zeros)
        t, s = never.nonzero()[0].tolist()
        return (f"row {t} gives token {s} ({'itself' if s == t else 'an earlier token'}) no weight in any of the "
                f"{weights.shape[0]} sequences: the mask hides too much; a token sees every token up to itself"
                + (" (is the diagonal hidden too?)" if s == t else ""))
    return ""


TOO_LITTLE = ("some attention weight above the diagonal is nonzero: a future token is visible "
              "(the mask hides too little)")


def mask_problem(weights, visible):
    """What is wrong with the mask behind attention weights of shape (batch, T, T) after dropout
    (``visible``: (T, T), True where a query may see a key), in words; "" when nothing. Hiding too much
    (``hidden_too_much``: a row of nan, or a key that never gets weight), too little (weight where a key is
    not visible) and both at once (the wrong tokens) each have their own sentence. nan is neither 0 nor
    weight: a row of nan is hidden_too_much's to name, not a visible future."""
    hidden = hidden_too_much(weights, visible)
    seen = bool(((weights != 0) & weights.isfinite())[..., ~visible].any())
    if hidden and seen:
        return (f"{hidden}, and some weight above the diagonal is nonzero, so a future token is visible too: the "
                "mask hides the wrong tokens (the wrong way round: tril where triu belongs, or 0 and 1 swapped?)")
    return hidden or (TOO_LITTLE if seen else "")


def check_dropout(out, p, what):
    """Judge the output of ``dropout_report``: see ``probes.common.dropout_weights``."""
    expect(out.dim() == 3, f"{what}: the output of a batch of shape (batch, tokens, dim) has shape "
           f"{tuple(out.shape)}; it should have 3 dimensions too")
    b, T, width = out.shape
    expect(b > 0 and T > 1 and width == T + 1, f"{what}: output has shape {tuple(out.shape)}, expected "
           f"({max(b, 1)}, {T}, {T + 1})")
    weights, total = out[..., :T].double(), out[..., T].double()
    causal = torch.tril(torch.ones(T, T, dtype=torch.bool)).expand(b, T, T)
    problem = mask_problem(weights, causal[0])
    if problem:
        raise Fail(f"{what}: in train mode {problem}")
    expect_finite(out, f"{what}: the output in train mode")
    uniform = (1.0 / torch.arange(1, T + 1, dtype=torch.float64)).view(1, T, 1).expand(b, T, T)
    kept = causal & (weights != 0)
    expect(bool(kept.any()), f"{what}: in train mode every attention weight came out 0 (is forward returning zeros?); "
           f"with dropout={p} about {1 - p:.0%} of them should survive, scaled by 1/(1-p)")
    dropped = float(1 - kept.sum() / causal.sum())
    expect(dropped > 0.005, f"{what}: in train mode with dropout={p} no attention weight was zeroed; "
           "dropout must act on the attention weights after the softmax")
    ratio = weights[kept] / uniform[kept]
    scale = 1 / (1 - p)
    expect(float(ratio.max() - ratio.min()) <= 1e-3 * float(ratio.abs().max()),
           f"{what}: with equal scores every visible token should get the same weight (1/(t+1) in row t) before "
           "dropout, but the kept weights differ within a row; check the mask and the softmax first")
    if not torch.allclose(ratio, torch.full_like(ratio, scale), rtol=1e-4, atol=0):
        seen = ratio.median().item()
        hint = " (that is 1/p; use 1/(1-p), as nn.Dropout does)" if abs(seen - 1 / p) < 1e-3 else ""
        raise Fail(f"{what}: kept attention weights are scaled by {seen:.4f}{hint}; "
                   f"with dropout={p} they should be scaled by exactly 1/(1-p) = {scale:.4f}")
    expect(abs(dropped - p) < 0.03, f"{what}: {dropped:.1%} of the attention weights were zeroed; "
           f"with dropout={p} about {p:.0%} should be")
    expect(torch.allclose(total, weights.sum(-1), atol=1e-5),
           f"{what}: dropout seems to act on the output of attention, not on the attention weights")


def check_eval(obs, what):
    rep = get(obs)
    first = rep["first"]
    expect(bool(first.isfinite().all()), f"{what} in eval mode gives nan or inf")
    expect(same(first, rep["second"]),
           f"{what}: two calls in eval mode gave different outputs; dropout must be off in eval mode "
           "(nn.Dropout does this; F.dropout needs training=self.training)")
    expect_close(first, rep["p0"], f"{what} in eval mode vs. the same weights with dropout=0")
    expect(not close(first, rep["other_input"]),
           f"{what} gave the same output for two different inputs (does forward return a stored result?)")


def check_gradients(obs, what):
    grads = get(obs)
    expect(len(grads) > 0, f"{what} has no parameters")
    missing = [str(name) for name, ok in grads.items() if not ok]
    expect(not missing, f"{what}: no gradient reaches {', '.join(missing)} (is it used in forward, "
           "and not detached or replaced by a plain tensor?)")


def check_device(obs, device, what, buffers=("mask",)):
    """Judge ``device_report``: by where the module's tensors went (each of ``buffers``, the contract's, a
    registered buffer on ``device``) and which devices its forward met, and by its forward where it ran
    (``forward_failure``). The names come from the contract, never from the report."""
    rep = get(obs)
    for name in buffers:
        kept = rep["buffers"].get(name, {"is_buffer": False, "device": "none"})
        expect(kept["is_buffer"], f"{what}.{name} is not a registered buffer, so .to({device!r}) does not move it")
        expect(kept["device"] == device, f"after {what}.to({device!r}) the {name} is on {kept['device']}")
    expect(not rep["left_behind"], f"after {what}.to({device!r}) these tensors stayed behind: "
           f"{', '.join(map(str, rep['left_behind']))}; a tensor the module needs must be a parameter or a buffer")
    expect(not rep["strays"], f"{what}.forward on {device} used a tensor that is not on {device} "
           f"({rep['strays'][0] if rep['strays'] else ''}): a tensor made in forward needs device=x.device, and one "
           "kept on the module must be a buffer")
    out = rep["forward"]
    note = forward_failure(out, device, what)
    if note:
        return note
    went = out.get("device") if isinstance(out, dict) else None  # a forward the reference's own fails may say anything
    expect(went == device, f"{what} on {device} returned an output on {went}")
    if "out" in out:
        expect(close(out["out"], out["cpu_out"], atol=1e-4, rtol=1e-4, equal_nan=True),  # nan where the CPU has nan
               f"{what} on {device} gives different numbers than on the CPU")


def last_token(out):
    """The outputs at the last position of a (batch, tokens, dim) output (the whole of anything else)."""
    return out[:, -1] if out.dim() == 3 and out.shape[1] else out


def check_state_dict(obs, what, buffer="mask", persists=True):
    """Judge ``state_dict_report``: the changed ``buffer`` (named by the layer's contract) is in the
    state_dict and comes back with it, and so does the output it changed; where ``persists`` is False
    (a plain attribute, shown as the failure it is) the change is lost."""
    rep = get(obs)
    changed, reloaded, flipped = rep["changed_buffer"], rep["reloaded_buffer"], rep["flipped_to"]
    survived = reloaded is not None and close(reloaded.double(), changed.double(), atol=0, rtol=0)
    if persists:
        expect(buffer in rep["keys"],
               f"{what}.state_dict() has no {buffer!r} (keys: {', '.join(map(str, rep['keys']))})")
        # what was changed is the contract's to say (its buffer's name), never the report's
        change = (f"{'hiding token 0 from' if flipped else 'showing token 0 to'} the last token (mask[-1, 0] = "
                  f"{flipped})" if buffer == "mask" else f"changing every entry of {what}.{buffer}")
        expect(not close(last_token(rep["changed_out"]), last_token(rep["before_change_out"])),
               f"{change} did not change {what}'s output: does forward use self.{buffer}?")
        expect(survived, f"a changed {what}.{buffer} did not survive saving and loading the state_dict")
        # the last token's output, where a changed mask entry acts (a row of nan elsewhere is other checks' to name)
        expect(close(last_token(rep["reloaded_out"]), last_token(rep["changed_out"]), atol=1e-5, rtol=1e-5),
               f"{what} gives different outputs after saving and loading its state_dict")
    else:
        expect(buffer not in rep["keys"], f"{what}.state_dict() contains {buffer!r}; this class must keep the "
               f"{buffer} as a plain attribute, not a buffer")
        expect(not survived, f"a changed {what}.{buffer} survived saving and loading; a plain "
               "attribute is not part of the state_dict")


def expect_parameters(shapes, want, call, hint=""):
    """``shapes`` (parameter name -> shape, from ``named_parameters``) are ``want``'s; otherwise the
    check fails naming the first missing, extra or misshapen parameter (and ``hint``)."""
    missing = [n for n in want if n not in shapes]
    extra = [n for n in shapes if n not in want]
    misshapen = [n for n in want if n in shapes and list(shapes[n]) != list(want[n])]
    expect(not missing, f"{call} has no parameter {missing[0] if missing else ''}"
           + (f" (nor {', '.join(missing[1:])})" if len(missing) > 1 else "") + hint)
    expect(not extra, f"{call} has a parameter the contract does not: {', '.join(extra)}{hint}")
    expect(not misshapen, f"{call}.{misshapen[0] if misshapen else ''} has shape "
           f"{tuple(shapes[misshapen[0]]) if misshapen else ()}, expected "
           f"{tuple(want[misshapen[0]]) if misshapen else ()}{hint}")


def expect_finite(t, what, hint=""):
    if not bool(t.isfinite().all()):
        idx = (~t.isfinite()).nonzero()[0].tolist()
        raise Fail(f"{what}[{', '.join(map(str, idx))}] is {t[tuple(idx)].item()}{hint}")


ALL_HIDDEN_HINT = (": a row whose keys are all hidden (a sequence of nothing but padding) must stay finite; "
                   "fill hidden scores with a large negative finite number (-1e9 or torch.finfo(dtype).min), "
                   "not -inf, whose softmax is nan")


def check_padding(rep, real, what):
    """Judge a padding report: outputs of real tokens ignore padded inputs; nothing is nan.

    ``real``: (batch, seq) bool, True for the tokens whose outputs must not change.
    """
    shape = tuple(rep["clean"].shape)
    expect(len(shape) == 3 and shape[:2] == tuple(real.shape), f"{what}: the output for a batch of shape "
           f"{(*real.shape, 'dim')} with a padding mask has shape {shape}; check how the mask's axes line up with "
           "the scores' (batch, query, key) axes")
    expect_finite(rep["clean"], f"{what} output with padding")
    expect_finite(rep["all_padded"], f"{what} output", ALL_HIDDEN_HINT)
    expect(tuple(rep["junk"].shape) == shape, f"{what}: changing the padded positions' inputs changed the output's "
           f"shape from {shape} to {tuple(rep['junk'].shape)}")
    clean, junk = rep["clean"][real].double(), rep["junk"][real].double()
    moved = (clean - junk).abs().amax(dim=-1)
    expect(bool(moved.isfinite().all()), f"{what}: with junk in the padded positions the output of a real token "
           "is nan or inf; the mask must hide padded keys")
    if bool((moved > 1e-5 * max(1.0, float(clean.abs().max()))).any()):
        b, t = real.nonzero()[int(moved.argmax())].tolist()
        raise Fail(f"{what}: the output of real token {t} in sequence {b} changed by {moved.max().item():.4g} "
                   "when only the padded positions' inputs changed; the mask must hide padded keys "
                   "(mask 0 = hidden, filled before the softmax)")


def check_value_error(obs, call, why, in_forward=False):
    """Judge ``raised``: ``call`` must raise ValueError (``why``: what is wrong with its arguments). The
    message is the student's own: no length or wording is asked of it, as no docstring asks. ``in_forward``:
    the call is a forward or a function, not a constructor that should refuse what forward cannot do."""
    r = get(obs)
    expect(r["raised"] != "AssertionError", f"{call} raised AssertionError; raise ValueError instead "
           "(asserts vanish under python -O)")
    expect(r["raised"] in ("ValueError", ""), f"{call} should raise ValueError ({why}); it raised "
           f"{r['raised']} instead: {r['message']}")
    expect(r["raised"] == "ValueError", f"{call} should raise ValueError ({why}), but it did not"
           + ("" if in_forward else ": without the check the mistake surfaces later, in forward, far from its cause"))


def check_context_edges(fits, past, layer, cached, context):
    """A layer holding a cache of ``cached`` tokens in a context of ``context``: fed the tokens that fill
    it exactly (``fits``: ``raised``, and ``held``, the tokens its cache held) it must not raise, and fed
    one token more (``past``) it must raise ValueError. A fit refused by a cache that held more than it
    was fed is not this check's: the cache checks name that."""
    more = context - cached
    expect(not fits["raised"] or fits["held"] != cached, f"{layer} fed {more} tokens after a cache of {cached} raised "
           f"{fits['raised']} ({fits['message']}); {cached} + {more} tokens fill context_length {context} exactly, "
           "which is allowed")
    check_value_error(past, f"{layer} fed {more + 1} tokens after a cache of {cached}",
                      f"{cached} + {more + 1} tokens exceed context_length {context}: the cached tokens count",
                      in_forward=True)


def check_dropout_of(obs, p, what, intermediate):
    """Judge ``dropout_pair``: the train-mode output is the same layer's eval output (``intermediate``)
    with inverted dropout applied."""
    undropped = get(obs, "eval")
    expect_finite(undropped, f"{what}: the output in eval mode")
    check_inverted_dropout(get(obs, "train"), undropped, p, what,
                           f"of {intermediate} (the same layer's output in eval mode)")


def check_inverted_dropout(out, undropped, p, what, where):
    """``out`` should be ``undropped`` with about p of its nonzero entries zeroed and the others
    scaled by exactly 1/(1-p) (inverted dropout, as nn.Dropout does in train mode)."""
    out, undropped = out.double(), undropped.double()
    expect(out.shape == undropped.shape,
           f"{what}: output has shape {tuple(out.shape)}, expected {tuple(undropped.shape)}")
    expect_finite(out, f"{what}: the output in train mode")
    live = undropped.abs() > 1e-6
    zeroed = live & (out == 0)
    fraction = float(zeroed.sum() / live.sum())
    expect(fraction > 0.005, f"{what} in train mode with dropout={p} zeroed nothing {where}")
    kept = live & ~zeroed
    expect(bool(kept.any()), f"{what} in train mode with dropout={p} zeroed every value {where}; about "
           f"{1 - p:.0%} of them should be kept, scaled by 1/(1-p)")
    ratio = out[kept] / undropped[kept]
    scale = 1 / (1 - p)
    if not torch.allclose(ratio, torch.full_like(ratio, scale), rtol=1e-3, atol=0):
        low, high, typical = ratio.min().item(), ratio.max().item(), ratio.median().item()
        said = (f"about {typical:.4f} (is dropout applied somewhere else?)" if abs(typical - scale) > 1e-3 * scale
                else f"{typical:.4f} for most, but from {low:.4g} to {high:.4g} for some")
        raise Fail(f"{what}: in train mode the values {where} that dropout keeps should be scaled by exactly "
                   f"1/(1-p) = {scale:.4f}; their ratio to the values without dropout is {said}")
    expect(abs(fraction - p) < 0.04, f"{what}: dropout zeroed {fraction:.1%} of the values {where}; "
           f"with dropout={p} about {p:.0%} should be")
