"""Rules for dask.array and CuPy: numpy's own rules, for every spelling.

dask and CuPy arrays follow numpy's dispatch protocols (``__array_ufunc__``,
``__array_function__``): ``np.sum(x)`` on a dask array builds a dask graph, on
a CuPy array runs on the GPU. numpy's rules are registered for such arrays
(:class:`rulescore.DuckArray`) and build their cotangents with numpy's
functions, so the cotangent of a dask array is a dask array (uncomputed) and
that of a CuPy array a CuPy array.

Users also write the library's own spellings: ``da.sum(x)``, ``cupy.exp(x)``,
``x.sum(axis=0)``, ``x.reshape(2, 3)``. Each of those that has a numpy namesake
with a rule gets a rule that calls numpy's: its primal ``np.sum(x)`` dispatches
back to the array's library, so the value is the library's own. The rules are
registered when the library is imported (``rules/__init__`` registers this
module lazily); nothing here imports dask or CuPy.

>>> import numpy as np
>>> from rules._array_libraries import METHODS
>>> METHODS["flatten"] is np.ravel
True
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Any

import numpy as np

from rulescore import AbstractZero, NoTangent, ZeroTangent, frule, rrule, unthunk

__all__ = ["METHODS", "register_library"]

#: Array methods whose call ``x.m(*args, **kw)`` is ``f(x, *args, **kw)`` for a numpy
#: function ``f`` (the same parameters after ``x``).
METHODS: dict[str, Callable] = {
    **{
        name: getattr(np, name)
        for name in (
            "sum", "mean", "prod", "max", "min", "var", "std", "cumsum", "cumprod",
            "dot", "clip", "round", "take", "repeat", "squeeze", "swapaxes", "conj",
            "diagonal", "trace", "ravel", "copy", "argmax", "argmin", "argsort", "all",
            "any", "nonzero", "nansum", "nanmean",
        )
    },
    "conjugate": np.conj,
    "flatten": np.ravel,
}  # fmt: skip


def _shape_arguments(args: tuple) -> tuple:
    """``x.reshape(2, 3)`` / ``x.transpose(1, 0)``: numpy's methods also take the
    shape or axes as separate arguments, its functions as one tuple."""
    x, rest = args[0], args[1:]
    if len(rest) > 1 or (len(rest) == 1 and isinstance(rest[0], int)):
        return (x, rest)
    return args


def _delegate(name: str, target: Callable, normalize: Callable | None) -> tuple:
    """Rules for ``name`` (a library function or method) that call ``target``'s rules."""

    def _missing(kind: str) -> NotImplementedError:
        return NotImplementedError(
            f"{name} is numpy's {getattr(target, '__name__', target)} on an array of "
            f"another library, which has no {kind} for these arguments.\n"
            f"To fix: call numpy's function on the array directly, or register an {kind} "
            f"for {name} with rulescore."
        )

    def delegated_rrule(*args: Any, **kwargs: Any) -> Any:
        n = len(args)
        if normalize is not None:
            args = normalize(args)
        out = rrule(target, *args, **kwargs)
        if out is None:
            raise _missing("rrule")
        if len(args) == n:
            return out
        y, pb = out

        def normalized_pullback(ȳ: Any) -> tuple:  # one cotangent per original argument
            cts = pb(ȳ)
            return (*cts[:2], *(NoTangent(),) * (n - 1))

        return y, normalized_pullback

    def delegated_frule(ḟ: Any, *rest: Any, **kwargs: Any) -> Any:
        n = len(rest) // 2
        ts, args = rest[:n], rest[n:]
        if normalize is not None:
            args = normalize(args)
            ts = (ts[0], *(NoTangent(),) * (len(args) - 1))
        out = frule((NoTangent(), *ts), target, *args, **kwargs)
        if out is None:
            raise _missing("frule")
        return out

    delegated_rrule.__name__ = delegated_rrule.__qualname__ = f"{name}_rrule"
    delegated_frule.__name__ = delegated_frule.__qualname__ = f"{name}_frule"
    return delegated_rrule, delegated_frule


def _register(f: Any, name: str, target: Callable, normalize: Callable | None = None) -> None:
    try:
        if rrule.has_rule_for(f):  # the library's own, or one registered before
            return
    except TypeError:  # unhashable: cannot carry a rule
        return
    r, fr = _delegate(name, target, normalize)
    rrule.register(f)(r)
    frule.register(f)(fr)


_SHAPE_METHODS: dict[str, Callable] = {"reshape": np.reshape, "transpose": np.transpose}


def register_library(module: str, array_type: str) -> None:
    """Give the functions of ``module`` (``"dask.array"``) that have a numpy namesake
    with a rule, and the methods of its array class ``array_type``
    (``"Array"``), rules that call numpy's rules."""
    lib = sys.modules[module]
    ruled = set()
    for f in rrule.functions():
        name = getattr(f, "__name__", None)
        if isinstance(name, str) and np.__dict__.get(name) is f:
            ruled.add(name)
    for name in sorted(ruled):
        own = getattr(lib, name, None)
        if own is not None and callable(own) and own is not np.__dict__[name]:
            _register(own, f"{module}.{name}", np.__dict__[name])
    cls = getattr(lib, array_type)
    methods = {name: f for name, f in METHODS.items() if rrule.has_rule_for(f)}
    for name, target in [*methods.items(), *_SHAPE_METHODS.items()]:
        own = getattr(cls, name, None)
        if own is not None and callable(own):
            normalize = _shape_arguments if name in _SHAPE_METHODS else None
            _register(own, f"{module}.{array_type}.{name}", target, normalize)


def _rechunk_rules(rechunk: Callable) -> None:
    """``rechunk`` moves values between blocks: linear, its adjoint rechunks back."""

    def rechunk_rrule(x: Any, *args: Any, **kwargs: Any) -> Any:
        def rechunk_pullback(ȳ: Any) -> tuple:
            ȳ = unthunk(ȳ)
            if isinstance(ȳ, AbstractZero):
                return (NoTangent(), ZeroTangent(), *(NoTangent(),) * len(args))
            # A numpy x that dask wrapped gets a numpy cotangent (computed, as its value).
            dx = ȳ.rechunk(x.chunks) if hasattr(x, "chunks") else np.asarray(ȳ)
            return (NoTangent(), dx, *(NoTangent(),) * len(args))

        return rechunk(x, *args, **kwargs), rechunk_pullback

    def rechunk_frule(ḟ: Any, *rest: Any, **kwargs: Any) -> Any:
        n = len(rest) // 2
        y = rechunk(*rest[n:], **kwargs)
        ẋ = unthunk(rest[0])
        if isinstance(ẋ, AbstractZero):
            return y, ẋ
        return y, rechunk(ẋ, y.chunks)

    rrule.register(rechunk)(rechunk_rrule)
    frule.register(rechunk)(rechunk_frule)


def register_dask() -> None:
    """The loader for ``dask.array``."""
    register_library("dask.array", "Array")
    da = sys.modules["dask.array"]  # imported: this runs when it is
    for f in (da.rechunk, da.Array.rechunk):
        _rechunk_rules(f)


def register_cupy() -> None:
    """The loader for ``cupy``."""
    register_library("cupy", "ndarray")
