"""Rules for the methods of numpy's binary ufuncs: ``outer``, ``accumulate``,
``reduce`` and ``reduceat`` (``np.multiply.outer(a, b)``, ``np.maximum.accumulate(x)``).

``np.add.outer`` is a builtin method bound to the ufunc ``np.add``; an AD meets
it as the method descriptor ``numpy.ufunc.outer`` called with the ufunc first,
so the rules are registered there and give the ufunc ``NoTangent``. Each rule
reuses the ufunc's own rules, so complex conjugation, ties and NaNs follow the
ufunc's conventions:

* ``f.outer(a, b)`` is ``f(a[..., None, ..., None], b)``: the ufunc's rule on a
  reshaped ``a`` (its pullback undoes the broadcast), reshaped back.
* ``f.accumulate(x, axis=0)``: ``add`` and ``multiply`` are ``cumsum`` and
  ``cumprod`` (exact with zeros); any other ufunc folds ``y_k = f(y_{k-1}, x_k)``
  and the pullback runs the ufunc's pullback backwards along the axis, so a tie
  of ``maximum`` splits as ``np.maximum`` splits it: half and half at each step.
* ``f.reduce(x, axis=0)``: ``add``, ``multiply``, ``maximum``, ``minimum`` are
  ``sum``, ``prod``, ``max``, ``min`` (``initial`` a constant, ``where=``
  respected; tied maxima share the gradient equally); any other ufunc is the
  last entry of the fold over the reduced axes (several only for a reorderable
  ufunc such as ``logaddexp``, in C order). An empty reduction is the ufunc's
  identity, with a zero cotangent. Where numpy's ``reduce`` disagrees with
  the fold (numpy 2.4's ``arctan2.reduce`` does), the rule raises ``ValueError``.
* ``f.reduceat(x, indices, axis=0)``: entry ``i`` is ``f.reduce`` of
  ``x[indices[i]:indices[i+1]]``, or ``x[indices[i]]`` where that slice is
  empty; a one-entry slice is copied (as numpy does: ``np.hypot.reduceat`` keeps
  its sign); cotangents of overlapping slices add.

``f.at(x, indices, b)`` writes into ``x`` and returns ``None``: it has no rule,
and an AD must refuse it where ``x`` carries a derivative (``ad`` raises
``NoRuleError`` naming ``numpy.ufunc.at``).

>>> import numpy as np
>>> from rulescore import rrule
>>> y, pb = rrule(np.ufunc.outer, np.multiply, np.array([1.0, 2.0]), np.array([3.0, 4.0, 5.0]))
>>> pb(np.ones((2, 3)))[2]
array([12., 12.])
>>> y, pb = rrule(np.ufunc.accumulate, np.maximum, np.array([1.0, 3.0, 3.0]))
>>> pb(np.array([0.0, 0.0, 1.0]))[2]
array([0. , 0.5, 0.5])
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numpy.lib.array_utils import normalize_axis_index, normalize_axis_tuple

from rulescore import NoTangent, ZeroTangent, frule, rrule, unthunk

from ._numpy_elementwise import no_ufunc_kwargs
from ._numpy_reductions import bind_options
from ._util import asarray, is_zero, project

__all__ = []

_ACC_ARGS = ("axis", "dtype", "out")
_REDUCE_ARGS = ("axis", "dtype", "out", "keepdims", "initial", "where")
_REDUCEAT_ARGS = ("axis", "dtype", "out")
_CUMULATIVE = {np.add: np.cumsum, np.multiply: np.cumprod}
_REDUCTIONS = {np.add: np.sum, np.multiply: np.prod, np.maximum: np.max, np.minimum: np.min}


def _dense(t: Any, like: np.ndarray) -> Any:
    """A tangent as an array of ``like``'s shape (zeros for a zero tangent)."""
    t = unthunk(t)
    if is_zero(t):
        return np.zeros(like.shape, like.dtype)
    return np.broadcast_to(asarray(t), like.shape)


def _no_kwargs_but(f: Any, kwargs: dict, allowed: tuple = ()) -> None:
    no_ufunc_kwargs(f, {k: v for k, v in kwargs.items() if k not in allowed or v is not None})


# outer


def _outer_operands(a: Any, b: Any) -> Any:
    """``a`` with one length-1 axis per axis of ``b`` appended."""
    return np.reshape(a, np.shape(a) + (1,) * np.ndim(b))


@rrule.register(np.ufunc.outer)
def ufunc_outer_rrule(ufunc: Any, a: Any, b: Any, **kwargs: Any) -> Any:
    """rrule of ``ufunc.outer(a, b)``: the ufunc's rule with ``a`` broadcast against ``b``."""
    Ω = ufunc.outer(a, b, **kwargs)
    _no_kwargs_but(ufunc, kwargs)
    _, pb = rrule(ufunc, _outer_operands(a, b), b)

    def ufunc_outer_pullback(ȳ: Any) -> tuple:
        ȳ = unthunk(ȳ)
        if is_zero(ȳ):
            return NoTangent(), NoTangent(), ZeroTangent(), ZeroTangent()
        _, da, db = pb(ȳ)
        da = unthunk(da)
        da = da if is_zero(da) else project(a, np.reshape(da, np.shape(a)))
        return NoTangent(), NoTangent(), da, db

    return Ω, ufunc_outer_pullback


@frule.register(np.ufunc.outer)
def ufunc_outer_frule(
    ḟ: Any, u̇: Any, ȧ: Any, ḃ: Any, ufunc: Any, a: Any, b: Any, **kwargs: Any
) -> Any:
    """frule of ``ufunc.outer(a, b)``."""
    _no_kwargs_but(ufunc, kwargs)
    ȧ = unthunk(ȧ)
    if not is_zero(ȧ):
        ȧ = _outer_operands(np.broadcast_to(ȧ, np.shape(a)), b)
    return frule((NoTangent(), ȧ, ḃ), ufunc, _outer_operands(a, b), b)


# accumulate: the fold and its two passes, along axis 0 of moved arrays


def _fold_pullback(ufunc: Any, x: np.ndarray, y: np.ndarray, ȳ: np.ndarray) -> np.ndarray:
    """Cotangent of ``x`` for ``y = ufunc.accumulate(x, axis=0)``, via the ufunc's rule."""
    n = x.shape[0]
    dx = np.zeros(x.shape, np.result_type(x, y, ȳ))
    if n == 0:
        return dx
    g = ȳ[n - 1 : n]
    for k in range(n - 1, 0, -1):
        _, pb = rrule(ufunc, y[k - 1 : k], x[k : k + 1])
        _, gy, gx = pb(g)
        dx[k : k + 1] = _dense(gx, x[k : k + 1])
        g = ȳ[k - 1 : k] + _dense(gy, y[k - 1 : k])
    dx[0:1] = g
    return dx


def _fold_tangent(ufunc: Any, ẋ: np.ndarray, x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Tangent of ``y = ufunc.accumulate(x, axis=0)`` along ``ẋ``."""
    ẏ = np.zeros(y.shape, np.result_type(y, ẋ))
    if x.shape[0] == 0:
        return ẏ
    ẏ[0:1] = ẋ[0:1]
    for k in range(1, x.shape[0]):
        _, t = frule((NoTangent(), ẏ[k - 1 : k], ẋ[k : k + 1]), ufunc, y[k - 1 : k], x[k : k + 1])
        ẏ[k : k + 1] = _dense(t, y[k : k + 1])
    return ẏ


@rrule.register(np.ufunc.accumulate)
def ufunc_accumulate_rrule(ufunc: Any, x: Any, *args: Any, **kwargs: Any) -> Any:
    """rrule of ``ufunc.accumulate(x, axis=0, dtype=None)``."""
    opts = bind_options(np.ufunc.accumulate, _ACC_ARGS, args, kwargs)
    rest = (NoTangent(),) * len(args)
    Ω = ufunc.accumulate(x, *args, **kwargs)
    axis = opts.get("axis", 0)
    if ufunc in _CUMULATIVE:
        _, pb = rrule(_CUMULATIVE[ufunc], x, axis=axis, dtype=opts.get("dtype"))
    else:
        _no_kwargs_but(ufunc, {k: v for k, v in opts.items() if k != "axis"}, ("dtype",))

    def ufunc_accumulate_pullback(ȳ: Any) -> tuple:
        ȳ = unthunk(ȳ)
        if is_zero(ȳ):
            return (NoTangent(), NoTangent(), ZeroTangent(), *rest)
        if ufunc in _CUMULATIVE:
            return (NoTangent(), NoTangent(), pb(ȳ)[1], *rest)
        xa = asarray(x)
        ax = normalize_axis_index(axis, xa.ndim)
        ȳm = np.moveaxis(np.broadcast_to(ȳ, Ω.shape), ax, 0)
        dx = _fold_pullback(ufunc, np.moveaxis(xa, ax, 0), np.moveaxis(Ω, ax, 0), ȳm)
        return (NoTangent(), NoTangent(), project(x, np.moveaxis(dx, 0, ax)), *rest)

    return Ω, ufunc_accumulate_pullback


@frule.register(np.ufunc.accumulate)
def ufunc_accumulate_frule(ḟ: Any, *args: Any, **kwargs: Any) -> Any:
    """frule of ``ufunc.accumulate(x, axis=0, dtype=None)``."""
    n = len(args) // 2
    ẋ, (ufunc, x, *extra) = unthunk(args[1]), args[n:]
    opts = bind_options(np.ufunc.accumulate, _ACC_ARGS, tuple(extra), kwargs)
    axis = opts.get("axis", 0)
    if ufunc in _CUMULATIVE:
        return frule((NoTangent(), ẋ), _CUMULATIVE[ufunc], x, axis=axis, dtype=opts.get("dtype"))
    _no_kwargs_but(ufunc, {k: v for k, v in opts.items() if k != "axis"}, ("dtype",))
    Ω = ufunc.accumulate(x, *extra, **kwargs)
    if is_zero(ẋ):
        return Ω, ZeroTangent()
    xa = asarray(x)
    ax = normalize_axis_index(axis, xa.ndim)
    ẋm = np.moveaxis(np.broadcast_to(ẋ, xa.shape), ax, 0)
    ẏ = _fold_tangent(ufunc, ẋm, np.moveaxis(xa, ax, 0), np.moveaxis(Ω, ax, 0))
    return Ω, project(Ω, np.moveaxis(ẏ, 0, ax))


# reduce


def _reduce_axes(opts: dict, ndim: int) -> tuple:
    axis = opts.get("axis", 0)
    return tuple(range(ndim)) if axis is None else normalize_axis_tuple(axis, ndim)


def _generic_reduce_parts(ufunc: Any, x: Any, opts: dict) -> tuple:
    """``(xm, ym, axes, kept, shape)``: ``x`` with the reduced axes flattened into axis 0
    after a row of the ufunc's identity where it has one (numpy starts there:
    ``np.hypot.reduce([-2.0])`` is 2), the fold along it, the axes, and the
    result's shape (with ``keepdims``)."""
    bad = {k: v for k, v in opts.items() if k in ("initial", "where", "dtype")}
    bad = {k: v for k, v in bad.items() if v is not np._NoValue and v is not True and v is not None}
    no_ufunc_kwargs(ufunc, bad)
    xa = asarray(x)
    axes = _reduce_axes(opts, xa.ndim)
    kept = [i for i in range(xa.ndim) if i not in axes]
    xm = np.transpose(xa, (*axes, *kept)).reshape((-1, *(xa.shape[i] for i in kept)))
    if ufunc.identity is not None:
        xm = np.concatenate([np.full((1, *xm.shape[1:]), ufunc.identity, xm.dtype), xm])
    shape = tuple(1 if i in axes else xa.shape[i] for i in range(xa.ndim))
    if not opts.get("keepdims", False):
        shape = tuple(xa.shape[i] for i in kept)
    ym = ufunc.accumulate(xm, axis=0)
    if not np.allclose(ym[-1], ufunc.reduce(xm, axis=0), equal_nan=True):
        # numpy 2.4's arctan2.reduce gives arctan2(x[0], x[-1]), not the fold.
        raise ValueError(
            f"numpy.{ufunc.__name__}.reduce does not equal the fold of {ufunc.__name__} "
            "along the axis here, so its derivative is unknown.\nTo fix: use "
            f"numpy.{ufunc.__name__}.accumulate(x, axis)[-1] (along the axis) instead."
        )
    return xm, ym, axes, kept, shape


def _unflatten(dxm: np.ndarray, xa: np.ndarray, axes: tuple, kept: list) -> np.ndarray:
    """Invert ``_generic_reduce_parts``' transpose and reshape (the identity row dropped)."""
    order = (*axes, *kept)
    dx = dxm[dxm.shape[0] - int(np.prod([xa.shape[i] for i in axes], dtype=int)) :]
    return np.transpose(dx.reshape(tuple(xa.shape[i] for i in order)), np.argsort(order))


def _reduce_rrule(ufunc: Any, x: Any, args: tuple, kwargs: dict) -> tuple:
    """``(Ω, pullback)``: the pullback gives ``x``'s cotangent alone."""
    opts = bind_options(np.ufunc.reduce, _REDUCE_ARGS, args, kwargs)
    Ω = ufunc.reduce(x, *args, **kwargs)
    if ufunc in _REDUCTIONS:
        kw = _delegated_options(ufunc, opts)
        _, pb = rrule(_REDUCTIONS[ufunc], x, axis=opts.get("axis", 0), **kw)

        def delegated_pullback(ȳ: Any) -> Any:
            return pb(ȳ)[1]

        return Ω, delegated_pullback
    xm, ym, axes, kept, _ = _generic_reduce_parts(ufunc, x, opts)

    def reduce_pullback(ȳ: Any) -> Any:
        if np.size(x) == 0:
            return ZeroTangent()
        ȳm = np.zeros(ym.shape, np.result_type(ym, ȳ))
        ȳm[-1] = np.reshape(ȳ, ym.shape[1:])
        dxm = _fold_pullback(ufunc, xm, ym, ȳm)
        return project(x, _unflatten(dxm, asarray(x), axes, kept))

    return Ω, reduce_pullback


def _delegated_options(ufunc: Any, opts: dict) -> dict:
    """The options ``np.sum``/``np.prod``/``np.max``/``np.min`` take, ``axis`` aside (max
    and min take no ``dtype``: a ``dtype=None`` is left out)."""
    drop_dtype = ufunc in (np.maximum, np.minimum) and opts.get("dtype", 0) is None
    return {
        k: v
        for k, v in opts.items()
        if k != "axis" and v is not np._NoValue and not (drop_dtype and k == "dtype")
    }


def _reduce_frule(ufunc: Any, ẋ: Any, x: Any, args: tuple, kwargs: dict) -> tuple:
    opts = bind_options(np.ufunc.reduce, _REDUCE_ARGS, args, kwargs)
    if ufunc in _REDUCTIONS:
        kw = _delegated_options(ufunc, opts)
        return frule((NoTangent(), ẋ), _REDUCTIONS[ufunc], x, axis=opts.get("axis", 0), **kw)
    Ω = ufunc.reduce(x, *args, **kwargs)
    xm, ym, axes, kept, shape = _generic_reduce_parts(ufunc, x, opts)
    if is_zero(ẋ) or np.size(x) == 0:
        return Ω, ZeroTangent()
    xa = asarray(x)
    ẋm = np.transpose(np.broadcast_to(ẋ, xa.shape), (*axes, *kept)).reshape((-1, *ym.shape[1:]))
    ẋm = np.concatenate([np.zeros((len(xm) - len(ẋm), *ym.shape[1:]), ẋm.dtype), ẋm])
    ẏ = _fold_tangent(ufunc, ẋm, xm, ym)[-1]
    return Ω, project(Ω, np.reshape(ẏ, shape))


@rrule.register(np.ufunc.reduce)
def ufunc_reduce_rrule(ufunc: Any, x: Any, *args: Any, **kwargs: Any) -> Any:
    """rrule of ``ufunc.reduce(x, axis=0, dtype=None, keepdims=False, initial, where)``."""
    Ω, pb = _reduce_rrule(ufunc, x, args, kwargs)
    rest = (NoTangent(),) * len(args)

    def ufunc_reduce_pullback(ȳ: Any) -> tuple:
        ȳ = unthunk(ȳ)
        if is_zero(ȳ):
            return (NoTangent(), NoTangent(), ZeroTangent(), *rest)
        return (NoTangent(), NoTangent(), pb(ȳ), *rest)

    return Ω, ufunc_reduce_pullback


@frule.register(np.ufunc.reduce)
def ufunc_reduce_frule(ḟ: Any, *args: Any, **kwargs: Any) -> Any:
    """frule of ``ufunc.reduce``."""
    n = len(args) // 2
    ẋ, (ufunc, x, *extra) = unthunk(args[1]), args[n:]
    return _reduce_frule(ufunc, ẋ, x, tuple(extra), kwargs)


# reduceat


def _segments(indices: Any, n: int) -> list:
    """The slice along the axis behind each entry of ``reduceat``'s result."""
    idx = [int(i) for i in asarray(indices).reshape(-1)]
    out = []
    for i, s in enumerate(idx):
        e = idx[i + 1] if i + 1 < len(idx) else n
        out.append(slice(s, e) if s < e else slice(s, s + 1))
    return out


def _reduceat_axis(x: Any, args: tuple, kwargs: dict) -> int:
    opts = bind_options(np.ufunc.reduceat, _REDUCEAT_ARGS, args, kwargs)
    if opts.get("dtype") is not None:
        no_ufunc_kwargs(np.ufunc.reduceat, {"dtype": opts["dtype"]})
    return normalize_axis_index(opts.get("axis", 0), np.ndim(x))


@rrule.register(np.ufunc.reduceat)
def ufunc_reduceat_rrule(ufunc: Any, x: Any, indices: Any, *args: Any, **kwargs: Any) -> Any:
    """rrule of ``ufunc.reduceat(x, indices, axis=0)``: a reduce per slice."""
    Ω = ufunc.reduceat(x, indices, *args, **kwargs)
    axis = _reduceat_axis(x, args, kwargs)
    rest = (NoTangent(),) * len(args)

    def ufunc_reduceat_pullback(ȳ: Any) -> tuple:
        ȳ = unthunk(ȳ)
        if is_zero(ȳ):
            return (NoTangent(), NoTangent(), ZeroTangent(), NoTangent(), *rest)
        xa = np.moveaxis(asarray(x), axis, 0)
        ȳm = np.moveaxis(np.broadcast_to(ȳ, Ω.shape), axis, 0)
        dx = np.zeros(xa.shape, np.result_type(xa, ȳm))
        for i, seg in enumerate(_segments(indices, xa.shape[0])):
            if seg.stop - seg.start == 1:  # numpy copies a one-entry slice
                dx[seg] += ȳm[i]
                continue
            _, pb = _reduce_rrule(ufunc, xa[seg], (0,), {})
            d = unthunk(pb(ȳm[i]))
            if not is_zero(d):
                dx[seg] += d
        dx = project(x, np.moveaxis(dx, 0, axis))
        return (NoTangent(), NoTangent(), dx, NoTangent(), *rest)

    return Ω, ufunc_reduceat_pullback


@frule.register(np.ufunc.reduceat)
def ufunc_reduceat_frule(ḟ: Any, *args: Any, **kwargs: Any) -> Any:
    """frule of ``ufunc.reduceat(x, indices, axis=0)``."""
    n = len(args) // 2
    ẋ, (ufunc, x, indices, *extra) = unthunk(args[1]), args[n:]
    Ω = ufunc.reduceat(x, indices, *extra, **kwargs)
    axis = _reduceat_axis(x, tuple(extra), kwargs)
    if is_zero(ẋ):
        return Ω, ZeroTangent()
    xa = np.moveaxis(asarray(x), axis, 0)
    ẋa = np.moveaxis(np.broadcast_to(ẋ, np.shape(x)), axis, 0)
    ẏ = np.zeros((len(_segments(indices, 0)), *xa.shape[1:]), np.result_type(Ω, ẋa))
    for i, seg in enumerate(_segments(indices, xa.shape[0])):
        if seg.stop - seg.start == 1:
            ẏ[i] = ẋa[seg.start]
            continue
        _, t = _reduce_frule(ufunc, ẋa[seg], xa[seg], (0,), {})
        ẏ[i] = _dense(t, ẏ[i])
    return Ω, project(Ω, np.moveaxis(ẏ, 0, axis))
