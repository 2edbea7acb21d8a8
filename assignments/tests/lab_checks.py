"""How the public checks call your code.

Every call into ``attention_lab`` goes through :func:`run`, so a mistake shows up as one
line that names your file and line instead of a long traceback through the test code:

    not implemented yet: CausalAttention.forward (attention_lab/causal.py line 74)
    CausalAttention.forward raised RuntimeError at attention_lab/causal.py line 80 (...): ...
"""
import importlib
import importlib.util
import os
import re
import sys
from pathlib import Path

import pytest
import torch
import torch.nn as nn

from feedback import describe_error, describe_future, describe_mismatch, describe_row_sums, error_record

from book import PRINTED
from pictures import TOKENS, weight_pictures

PICTURES = "failed-pictures"  # beside the attention_lab/ checked (the handout folder): named in the message


def fail(message):
    pytest.fail(message, pytrace=False)


def expect(condition, message):
    if not condition:
        fail(message)


# --- calling your code ---------------------------------------------------------------------

def _package_dir():
    module = sys.modules.get("attention_lab")
    origin = getattr(module, "__file__", None)
    if origin is None:
        spec = importlib.util.find_spec("attention_lab")
        origin = spec.origin if spec else None
    return Path(origin).resolve().parent if origin else None


def _describe(exc, what):
    return describe_error(error_record(exc, _package_dir()), what)


def _name(fn):
    if isinstance(fn, torch.nn.Module):
        return f"{type(fn).__name__}.forward"
    if isinstance(fn, type):
        return f"{fn.__name__}(...)"
    return getattr(fn, "__qualname__", None) or getattr(fn, "__name__", None) or repr(fn)


def _with_hint(problem, exc, hint):
    """``problem``, and on a line of its own what ``hint(exc)`` adds (nothing when it gives None)."""
    extra = hint(exc) if hint is not None and not isinstance(exc, NotImplementedError) else None
    return f"{problem}\n{extra}" if extra else problem


def run(fn, *args, what=None, hint=None, **kwargs):
    """``fn(*args, **kwargs)``; any exception becomes a one-line failure about your code.

    Tensor arguments are passed as copies, so that code which changes its input in place
    cannot spoil the book's inputs for the checks that follow. ``hint(exc)``, when given, may
    add a line saying what the exception usually means (None: nothing to add).
    """
    what = what or _name(fn)
    args = [a.clone() if isinstance(a, torch.Tensor) else a for a in args]
    try:
        return fn(*args, **kwargs)
    except Exception as exc:  # NotImplementedError included: it reads "not implemented yet: ..."
        problem = _with_hint(_describe(exc, what), exc, hint)
    fail(problem)  # outside the except block: no "During handling of the above exception" chain


def expect_raises(error, fn, *args, what=None, because="", hint=None, **kwargs):
    """``fn(*args, **kwargs)`` must raise ``error`` (your own NotImplementedError does not count);
    ``hint`` as for :func:`run`, for another exception."""
    what = what or _name(fn)
    try:
        fn(*args, **kwargs)
    except NotImplementedError as exc:
        problem = _describe(exc, what)
    except error:
        return
    except Exception as exc:
        problem = _with_hint(f"{what} should raise {error.__name__}{because}; instead " + _describe(exc, what),
                             exc, hint)
    else:
        problem = f"{what} should raise {error.__name__}{because}, but it returned normally"
    fail(problem)


class _YourModule:
    """Your module; a name the template defines but your file lacks is a failure, not an AttributeError."""

    def __init__(self, module, filename):
        self._module, self._filename = module, filename

    def __getattr__(self, name):
        if not hasattr(self._module, name):
            fail(f"{self._filename} has no `{name}`: keep the names the template gives you")
        return getattr(self._module, name)


def student(name):
    """Your ``attention_lab/<name>.py``, imported; a broken import becomes a one-line failure."""
    filename = f"attention_lab/{name}.py"
    try:
        return _YourModule(importlib.import_module(f"attention_lab.{name}"), filename)
    except Exception as exc:  # SyntaxError, ImportError, NotImplementedError, ...
        problem = describe_error(error_record(exc, _package_dir(), importing=filename))
    fail(problem)


# --- comparing results ----------------------------------------------------------------------

def tensor(value, what):
    """``value`` as a detached tensor, or a failure saying what it is instead."""
    if not isinstance(value, torch.Tensor):
        fail(f"{what} should be a torch.Tensor, got {type(value).__name__}")
    return value.detach()


def expect_shape(value, shape, what):
    shape = tuple(shape)
    got = tuple(tensor(value, what).shape)
    expect(got == shape, f"{what} has shape {got} but should have shape {shape}")


def _with_setup(problem, setup):
    return f"{setup}\n{problem}" if setup else problem


def expect_book(value, printed, what, setup="", causal=False):
    """Against the numbers the book prints (4 decimals); ``setup`` says how ``what`` was made.
    Printed attention weights (a square matrix) get a picture of the student's beside the book's."""
    problem = describe_mismatch(value, printed, what, atol=PRINTED, rtol=0)
    if problem:
        square = printed.dim() == 2 and printed.shape[0] == printed.shape[1]
        fail(_with_setup(problem, setup) + (_picture(value, what, causal, printed) if square else ""))


def _picture(weights, what, causal=False, expected=None):
    """Save pictures of attention ``weights`` (the student's) for the test that is failing, and
    say where: attention is faster seen than read. Nothing when they are no square matrix."""
    w = weights.detach() if isinstance(weights, torch.Tensor) else None
    if w is None or w.dim() < 2 or w.shape[-1] != w.shape[-2] or w.device.type == "meta" or w.numel() > 64 * 64:
        return ""
    test = re.sub(r"\W+", "_", os.environ.get("PYTEST_CURRENT_TEST", "check").split("::")[-1].split(" ")[0])
    drawn = weight_pictures(w.float(), TOKENS, what, causal=causal, expected=expected)
    folder = (_package_dir() or Path(__file__).resolve().parent / "attention_lab").parent
    paths = [p.save(folder / PICTURES / f"{test}-{i}.svg") for i, p in enumerate(drawn)]
    here = Path.cwd()
    shown = ", ".join(str(p.relative_to(here)) if p.is_relative_to(here) else str(p) for p in paths)
    return f"\npicture{'s' if len(paths) > 1 else ''} of your weights (open in a browser): {shown}"


def expect_close(value, expected, what, atol=1e-5, rtol=1e-4, setup=""):
    problem = describe_mismatch(value, expected, what, atol=atol, rtol=rtol)
    if problem:
        fail(_with_setup(problem, setup))


def expect_rows_sum_to_one(weights, what):
    problem = describe_row_sums(tensor(weights, what), what)
    if problem:
        fail(problem + _picture(weights, what))


def expect_no_future(weights, what):
    problem = describe_future(tensor(weights, what), what)
    if problem:
        fail(problem + _picture(weights, what, causal=True))


def expect_later_tokens_unseen(module, d_in, what, num_tokens=6, hint=""):
    """Causality seen from the outside: change the tokens from position t on, and the outputs at
    positions before t must stay as they were, for every t. ``module`` is called in eval mode on
    batches of shape (2, num_tokens, d_in); ``hint`` is added to the failure."""
    expect(isinstance(module, nn.Module), f"{what} should be an nn.Module, got {type(module).__name__}")
    module.eval()
    generator = torch.Generator().manual_seed(11)
    inputs = torch.randn(2, num_tokens, d_in, generator=generator)
    with torch.no_grad():
        base = tensor(run(module, inputs), f"the output of {what}")
        expect(base.dim() == 3 and base.shape[:2] == (2, num_tokens),
               f"{what} on a batch of shape (2, {num_tokens}, {d_in}) gives shape {tuple(base.shape)}; "
               f"expected (2, {num_tokens}, d_out), one output per token")
        tolerance = 1e-5 * max(1.0, float(base.abs().max()))
        for t in range(1, num_tokens):
            changed = inputs.clone()
            changed[:, t:] += 10 * torch.randn(2, num_tokens - t, d_in, generator=generator)
            out = tensor(run(module, changed), f"the output of {what}")
            moved = (out[:, :t] - base[:, :t]).abs().amax(dim=(0, 2))
            expect(bool(torch.isfinite(moved).all()), f"{what} gives nan or inf when tokens {t} and later change")
            if (moved > tolerance).any():
                earlier = int((moved > tolerance).nonzero()[0])
                later = f"tokens {t}..{num_tokens - 1}" if t < num_tokens - 1 else f"token {t}"
                fail(f"{what} on a batch of shape (2, {num_tokens}, {d_in}), eval mode: changing {later} moved "
                     f"the output at position {earlier} by {moved[earlier].item():.3g}; a token must not see "
                     "the tokens after it" + (f"\n{hint}" if hint else ""))


def expect_mask(mask, context_length, what):
    """A causal mask: (context_length, context_length), nonzero exactly above the diagonal."""
    mask = tensor(mask, what)
    expect_shape(mask, (context_length, context_length), what)
    future = torch.triu(torch.ones(context_length, context_length, dtype=torch.bool), diagonal=1)
    hidden = mask.cpu() != 0
    wrong = (hidden != future).nonzero()
    if len(wrong):
        i, j = wrong[0].tolist()
        kind = "above" if j > i else ("on" if i == j else "below")
        should = "nonzero (hidden)" if j > i else "0 (visible)"
        fail(f"{what}[{i}, {j}] is {mask[i, j].item()}; entries {kind} the diagonal should be {should}: "
             "the mask hides exactly the tokens after each token")


# --- your layers and PyTorch's ----------------------------------------------------------------

def expect_linear(layer, in_features, out_features, what, bias=True):
    """``layer`` is an ``nn.Linear(in_features, out_features)``, with a bias or (``bias=False``)
    without one; returns it."""
    want = f"nn.Linear({in_features}, {out_features}{'' if bias else ', bias=False'})"
    expect(layer is not None, f"{what} is missing: create it in __init__ as {want}")
    expect(isinstance(layer, nn.Linear), f"{what} should be an {want}, got {type(layer).__name__}")
    expect((layer.in_features, layer.out_features) == (in_features, out_features),
           f"{what} is nn.Linear({layer.in_features}, {layer.out_features}), expected {want}")
    expect(not bias or layer.bias is not None, f"{what} has no bias; {want} keeps the default bias=True")
    expect(bias or layer.bias is None, f"{what} has a bias; expected {want} (its bias follows qkv_bias)")
    return layer

