"""Rules for slices with number bounds and the grids built from them (``np.mgrid``, ``np.ogrid``).

``np.r_[a:b:5j]``, ``np.mgrid[a:b:5j]`` and ``np.ogrid[a:b:5j]`` compute values
from a slice's bounds: ``linspace(a, b, 5)`` for an imaginary step (its modulus
is the number of points), ``arange(a, b, step)`` for a real one. The AD turns
``a:b:5j`` into the call ``slice(a, b, 5j)``, so for a derivative to reach
``a`` and ``b`` (instead of a silent zero) ``slice`` itself has rules: a slice
with float or complex bounds has the structural tangent
``Tangent[slice](start=..., stop=..., step=...)``. Integer and ``None``
bounds get ``NoTangent()``: a slice of integers is a range of indices, and
integers used as indices get none anywhere. The rules of ``np.r_``/``np.c_``
(in :mod:`rules._numpy_assembly`) and of ``np.mgrid``/``np.ogrid`` (here) send
the values' cotangents to the bounds:

* imaginary step, ``n`` points: ``v_k = a + (b - a) w_k`` with ``w_k = k/(n-1)``
  (``v_0 = a`` for one point), so ``ā = Σ v̄_k (1 - w_k)`` and ``b̄ = Σ v̄_k w_k``;
  the step is a count and gets nothing.
* real step ``s``: ``v_k = a + k s``, so ``ā = Σ v̄_k`` and ``s̄ = Σ k v̄_k``;
  ``b`` only sets the number of values (a step function of it): zero.

A ``Tangent[slice]`` reaches nothing else: indexing an array or a list with
float bounds is an error in numpy and Python.

>>> import numpy as np, operator
>>> from rulescore import rrule
>>> y, pb = rrule(operator.getitem, np.mgrid, slice(0.0, 2.0, 3j))
>>> y, pb(np.array([1.0, 1.0, 1.0]))[2]
(array([0., 1., 2.]), Tangent[slice](start=1.5, stop=1.5))
"""

from __future__ import annotations

import operator
from typing import Any

import numpy as np

from rulescore import NoTangent, Tangent, ZeroTangent, frule, rrule, unthunk

from ._numpy_linear import tangent_dtype
from ._sequences import seq_entries
from ._util import asarray, is_zero, project

__all__ = ["bound_cotangent", "bound_tangent", "differentiable_slice"]

_NO = NoTangent()
_ZERO = ZeroTangent()
_FIELDS = ("start", "stop", "step")


def _inexact(b: Any) -> bool:
    """Whether a slice bound is a float or complex number (one that has a derivative)."""
    if isinstance(b, (float, complex, np.inexact)):
        return True
    return isinstance(b, np.ndarray) and b.ndim == 0 and b.dtype.kind in "fc"


def differentiable_slice(s: Any) -> bool:
    """Whether ``s`` is a slice with a float or complex start, stop or step."""
    return isinstance(s, slice) and (_inexact(s.start) or _inexact(s.stop) or _inexact(s.step))


def _slice_fields(n_args: int) -> tuple[str, ...]:
    return ("stop",) if n_args == 1 else _FIELDS[:n_args]


@rrule.register(slice)
def slice_rrule(*args: Any) -> Any:
    """rrule of ``slice``: float or complex bounds get their field of ``Tangent[slice]``."""
    s = slice(*args)
    fields = _slice_fields(len(args))
    if not any(_inexact(a) for a in args):
        nots = (_NO,) * (1 + len(args))

        def index_slice_pullback(s̄: Any) -> tuple:
            return nots

        return s, index_slice_pullback

    def slice_pullback(s̄: Any) -> tuple:
        s̄ = unthunk(s̄)
        out: list = []
        for name, a in zip(fields, args):
            if not _inexact(a):
                out.append(_NO)
            elif is_zero(s̄):
                out.append(_ZERO)
            else:
                d = unthunk(getattr(s̄, name))
                out.append(d if is_zero(d) else project(a, d))
        return (_NO, *out)

    return s, slice_pullback


@frule.register(slice)
def slice_frule(ṡ: Any, *rest: Any) -> Any:
    """frule of ``slice``: the bounds' tangents as ``Tangent[slice]`` fields."""
    n = len(rest) // 2
    args = rest[n:]
    s = slice(*args)
    fields = {
        name: unthunk(t)
        for name, t, a in zip(_slice_fields(n), rest[:n], args)
        if _inexact(a) and not is_zero(unthunk(t))
    }
    if not fields:
        return s, (_ZERO if any(_inexact(a) for a in args) else _NO)
    return s, Tangent[slice](**fields)


# --- from bounds to values and back -----------------------------------------------------------


def _count(s: slice) -> tuple[int, bool]:
    """The number of values ``s`` stands for, and whether it is a linspace (imaginary step)."""
    start = 0 if s.start is None else s.start
    step = 1 if s.step is None else s.step
    if isinstance(step, (complex, np.complexfloating)):
        return int(abs(step)), True
    return len(np.arange(start, s.stop, step)), False


def _weights(n: int) -> np.ndarray:
    """``w_k = k / (n - 1)``: how much of ``stop`` the k-th point of a linspace holds."""
    return np.arange(n) / (n - 1) if n > 1 else np.zeros(n)


def bound_cotangent(s: slice, v̄: Any) -> Any:
    """The cotangent of the slice ``s`` from that of the values it stands for (1-d)."""
    if not differentiable_slice(s):
        return _NO
    v̄ = np.ravel(unthunk(v̄))
    n, spaced = _count(s)
    k = np.arange(n)
    if spaced:
        w = _weights(n)
        parts = {"start": np.sum(v̄ * (1 - w)), "stop": np.sum(v̄ * w), "step": _NO}
    else:
        parts = {"start": np.sum(v̄), "stop": _ZERO, "step": np.sum(v̄ * k)}
    fields = {}
    for name in _FIELDS:
        b = getattr(s, name)
        if _inexact(b) and parts[name] is not _NO:
            fields[name] = parts[name] if is_zero(parts[name]) else project(b, parts[name])
    return Tangent[slice](**fields)


def bound_tangent(s: slice, ṡ: Any, dtype: Any) -> np.ndarray:
    """The tangent of the values ``s`` stands for (1-d, ``dtype``), from the slice's tangent."""
    n, spaced = _count(s)
    v̇ = np.zeros(n, dtype)
    ṡ = unthunk(ṡ)
    if is_zero(ṡ) or not differentiable_slice(s):
        return v̇
    start, stop, step = (unthunk(getattr(ṡ, f)) for f in _FIELDS)
    if not is_zero(start):
        v̇ = v̇ + (start * (1 - _weights(n)) if spaced else start)
    if spaced and not is_zero(stop):
        v̇ = v̇ + stop * _weights(n)
    if not spaced and not is_zero(step):
        v̇ = v̇ + step * np.arange(n)
    return v̇


# --- np.mgrid and np.ogrid ----------------------------------------------------------------

_GRIDS = type(np.mgrid) | type(np.ogrid)


def _grid_slices(key: Any) -> list:
    return list(key) if type(key) is tuple else [key]


def _grid_parts(obj: Any, key: Any, ȳ: Any) -> list:
    """The cotangent of each slice's values from the grid's cotangent ``ȳ``."""
    if type(key) is not tuple:
        return [ȳ]
    d = len(key)
    if obj.sparse:  # ogrid: a tuple of open arrays, the k-th varying along axis k
        return seq_entries(ȳ, d)
    ȳ = asarray(unthunk(ȳ))  # mgrid: (d, n_0, ..., n_{d-1}); grid k varies along axis k
    return [ȳ[k].sum(axis=tuple(j for j in range(d) if j != k)) for k in range(d)]


@rrule.register(operator.getitem)
def grid_getitem_rrule(obj: _GRIDS, key: Any) -> Any:
    """rrule of ``np.mgrid[...]`` / ``np.ogrid[...]``: the slices' float bounds get derivatives."""
    y = obj[key]
    slices = _grid_slices(key)

    def grid_pullback(ȳ: Any) -> tuple:
        ȳ = unthunk(ȳ)
        if is_zero(ȳ) or not any(differentiable_slice(s) for s in slices):
            return (_NO, _NO, _ZERO if any(map(differentiable_slice, slices)) else _NO)
        parts = _grid_parts(obj, key, ȳ)
        cts = [
            _ZERO if is_zero(unthunk(p)) and differentiable_slice(s) else bound_cotangent(s, p)
            for s, p in zip(slices, parts)
        ]
        return (_NO, _NO, tuple(cts) if type(key) is tuple else cts[0])

    return y, grid_pullback


@frule.register(operator.getitem)
def grid_getitem_frule(ḟ: Any, ȯ: Any, k̇: Any, obj: _GRIDS, key: Any) -> Any:
    """frule of ``np.mgrid[...]`` / ``np.ogrid[...]``."""
    y = obj[key]
    slices = _grid_slices(key)
    k̇ = unthunk(k̇)
    if is_zero(k̇) or not any(differentiable_slice(s) for s in slices):
        return y, (_ZERO if any(map(differentiable_slice, slices)) else _NO)
    if type(key) is not tuple:
        return y, project(y, bound_tangent(key, k̇, tangent_dtype(y)))
    d = len(key)
    dtype = tangent_dtype(y[0] if obj.sparse else y)
    v̇s = [bound_tangent(s, t, dtype) for s, t in zip(slices, seq_entries(k̇, d))]
    shapes = [[1] * d for _ in range(d)]
    for k, v̇ in enumerate(v̇s):
        shapes[k][k] = v̇.size
    opened = [v̇.reshape(shape) for v̇, shape in zip(v̇s, shapes)]
    if obj.sparse:
        return y, Tangent[tuple](*(project(yk, o) for yk, o in zip(y, opened)))
    return y, project(y, np.stack(np.broadcast_arrays(*opened)))
