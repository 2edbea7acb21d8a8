"""How the public checks call your code.

Every call into ``attention_lab`` goes through :func:`run`, so a mistake shows up as one
line that names your file and line instead of a long traceback through the test code:

    not implemented yet: CausalAttention.forward (attention_lab/causal.py line 74)
    CausalAttention.forward raised RuntimeError at attention_lab/causal.py line 80 (...): ...
"""
import importlib
import importlib.util
import sys
from pathlib import Path

import pytest
import torch
import torch.nn as nn

from feedback import describe_error, describe_future, describe_mismatch, describe_row_sums, error_record

from book import PRINTED


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


def run(fn, *args, what=None, **kwargs):
    """``fn(*args, **kwargs)``; any exception becomes a one-line failure about your code.

    Tensor arguments are passed as copies, so that code which changes its input in place
    cannot spoil the book's inputs for the checks that follow.
    """
    what = what or _name(fn)
    args = [a.clone() if isinstance(a, torch.Tensor) else a for a in args]
    try:
        return fn(*args, **kwargs)
    except Exception as exc:  # NotImplementedError included: it reads "not implemented yet: ..."
        problem = _describe(exc, what)
    fail(problem)  # outside the except block: no "During handling of the above exception" chain


def expect_raises(error, fn, *args, what=None, because="", **kwargs):
    """``fn(*args, **kwargs)`` must raise ``error`` (your own NotImplementedError does not count)."""
    what = what or _name(fn)
    try:
        fn(*args, **kwargs)
    except NotImplementedError as exc:
        problem = _describe(exc, what)
    except error:
        return
    except Exception as exc:
        problem = f"{what} should raise {error.__name__}{because}; instead " + _describe(exc, what)
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


def expect_book(value, printed, what, setup=""):
    """Against the numbers the book prints (4 decimals); ``setup`` says how ``what`` was made."""
    problem = describe_mismatch(value, printed, what, atol=PRINTED, rtol=0)
    if problem:
        fail(_with_setup(problem, setup))


def expect_close(value, expected, what, atol=1e-5, rtol=1e-4, setup=""):
    problem = describe_mismatch(value, expected, what, atol=atol, rtol=rtol)
    if problem:
        fail(_with_setup(problem, setup))


def expect_rows_sum_to_one(weights, what):
    problem = describe_row_sums(tensor(weights, what), what)
    if problem:
        fail(problem)


def expect_no_future(weights, what):
    problem = describe_future(tensor(weights, what), what)
    if problem:
        fail(problem)


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

