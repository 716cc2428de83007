"""Helpers shared by ad's test modules (importable through conftest's path entry)."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest

import ad
from rules.extension import REFCOUNTS_CALIBRATED
from rulescore import unthunk


def same_bits(a: Any, b: Any) -> None:
    """Assert bitwise equal values of the same type, shape and dtype (thunks evaluated)."""
    a, b = unthunk(a), unthunk(b)
    assert type(a) is type(b), (type(a), type(b))
    if isinstance(a, tuple):
        assert len(a) == len(b)
        for x, y in zip(a, b):
            same_bits(x, y)
    elif isinstance(a, (np.ndarray, np.generic)):
        assert a.shape == b.shape and a.dtype == b.dtype
        assert a.tobytes() == b.tobytes()
    else:
        assert a == b or (a != a and b != b)


@contextlib.contextmanager
def helpers_as_calls() -> Iterator[None]:
    """Transforms built afresh with helpers left as calls and ``*`` arguments kept
    (``ad.transform.inlining.ENABLED`` off), as before the block afterwards."""
    from ad.transform import inlining
    from ad.transform.cache import _CACHE, _FWD_CACHE

    inlining.ENABLED[0] = False
    _CACHE.clear()
    _FWD_CACHE.clear()
    try:
        yield
    finally:
        inlining.ENABLED[0] = True
        _CACHE.clear()
        _FWD_CACHE.clear()


def D_f(f: Any, x: Any, v: Any = 1.0) -> Any:
    """Forward mode, as a user writes it: ``f'(x) v``."""
    return ad.jvp(f, (x,), (v,))[1]


def D_r(f: Any, x: Any, v: Any = 1.0) -> Any:
    """Reverse mode, as a user writes it: ``⟨∇f(x), v⟩`` (no gradient flows: zero)."""
    g = ad.gradient(f, x)[0]
    return 0.0 if g is None else np.sum(g * v)


def nested(modes: str, f: Any, x: Any) -> Any:
    """The derivative of ``f`` at the number ``x`` taken by ``modes``, outer first: ``D``
    forward mode (``D_f``), ``G`` reverse mode (``D_r``); ``nested("DG", f, x)`` is
    ``f''(x)`` by forward over reverse, each level a closure over the outer variable."""
    if not modes:
        return f(x)
    outer = D_f if modes[0] == "D" else D_r
    return outer(lambda y: nested(modes[1:], f, y), x)


def fd_gradient(f: Any, *args: Any, h: float = 1e-6) -> tuple:
    """Central differences of the real-valued ``f`` in each argument (floats or
    arrays; each array entry perturbed in turn, the other arguments as given)."""
    out: list[Any] = []
    for i, x in enumerate(args):
        if isinstance(x, float):
            a, b = list(args), list(args)
            a[i], b[i] = x + h, x - h
            out.append((f(*a) - f(*b)) / (2 * h))
            continue
        x = np.asarray(x, dtype=float)
        g = np.zeros_like(x)
        for k in np.ndindex(x.shape):
            xp, xm = x.copy(), x.copy()
            xp[k] += h
            xm[k] -= h
            a, b = list(args), list(args)
            a[i], b[i] = xp, xm
            g[k] = (f(*a) - f(*b)) / (2 * h)
        out.append(g)
    return tuple(out)


def fd_hessian(f: Any, x: Any, h: float = 1e-5) -> np.ndarray:
    """Central differences of ``ad.gradient``, column by column (``x`` flattened in C order)."""
    x = np.asarray(x, dtype=float)
    cols = []
    for k in range(x.size):
        e = np.zeros(x.size)
        e[k] = h
        e = e.reshape(x.shape)
        gp = np.asarray(ad.gradient(f, x + e)[0], dtype=float).reshape(-1)
        gm = np.asarray(ad.gradient(f, x - e)[0], dtype=float).reshape(-1)
        cols.append((gp - gm) / (2 * h))
    return np.stack(cols, axis=1)


@contextlib.contextmanager
def rules_path() -> Iterator[None]:
    """Dispatch without the lean paths of ``ad.runtime.lean_rules``: each call runs its rule."""
    import ad.runtime.reverse as runtime

    saved = runtime._lean_rule
    runtime._lean_rule = lambda *args: None
    runtime.clear_dispatch_cache()
    try:
        yield
    finally:
        runtime._lean_rule = saved
        runtime.clear_dispatch_cache()


def general_gradient(f: Any, *args: Any) -> Any:
    """``ad.gradient`` with the operators' array fast paths off (the rules' path)."""
    from ad.runtime.scalar_paths import FLAGS

    saved = FLAGS.arrays, FLAGS.scalar_arrays
    FLAGS.arrays = FLAGS.scalar_arrays = frozenset()
    try:
        return ad.gradient(f, *args)
    finally:
        FLAGS.arrays, FLAGS.scalar_arrays = saved


#: For tests that an in-place path fires: reference counts are trusted only on the
#: CPython versions they were calibrated on (``rules.extension.REFCOUNTS_CALIBRATED``);
#: elsewhere the paths are off and the values are the same.
in_place = pytest.mark.skipif(
    not REFCOUNTS_CALIBRATED, reason="in-place paths are calibrated on CPython 3.11-3.13"
)


def plain_targets(src: str) -> str:
    """Generated source with tuple targets unparenthesized, as ``ast.unparse``
    writes them from Python 3.11 on (3.10 writes ``(a, b) = ...``)."""
    import re

    return re.sub(r"\(((?:\w+, )+\w+)\) = ", r"\1 = ", src)
