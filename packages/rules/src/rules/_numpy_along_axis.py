"""Rules for numpy's higher-order functions: ``apply_along_axis``, ``apply_over_axes``.

Both call a function of the user's, so they are differentiated by calling
back into the AD (``rrule_via_ad`` / ``frule_via_ad``, as ``map``'s and
``piecewise``'s rules do) and are registered for configs with
``HasReverseMode`` / ``HasForwardsMode`` (``ad`` passes one); without an AD
there is no rule.

* ``apply_along_axis(func1d, axis, arr, *args, **kwargs)`` runs numpy's loop:
  ``func1d`` on every 1-d slice of ``arr`` along ``axis``, through the AD; the
  results are laid out as numpy lays them out (the result's axes in place of
  ``axis``, the first result's dtype). Each slice gets the cotangent its own
  pullback returns; the extra ``args`` and the variables ``func1d`` captures
  get the sum over the slices; ``axis`` and keyword arguments get none.
* ``apply_over_axes(func, a, axes)`` is ``a = func(a, axis)`` for each axis in
  turn, a reduced axis put back as a length-1 axis; the pullback runs the
  chain backwards.

>>> import numpy as np
>>> from rulescore import HasForwardsMode, HasReverseMode, RuleConfig, frule, rrule
>>> class RulesOnly(RuleConfig, HasReverseMode, HasForwardsMode):
...     def rrule_via_ad(self, f, *args, **kw):
...         return rrule(f, *args, **kw)
>>> y, pb = rrule(RulesOnly(), np.apply_along_axis, np.cumsum, 1, np.ones((2, 3)))
>>> y
array([[1., 2., 3.],
       [1., 2., 3.]])
>>> pb(np.ones((2, 3)))[3]
array([[3., 2., 1.],
       [3., 2., 1.]])
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numpy.lib.array_utils import normalize_axis_index

from rulescore import (
    HasForwardsMode,
    HasReverseMode,
    NoTangent,
    ZeroTangent,
    frule,
    frule_via_ad,
    rrule,
    rrule_via_ad,
    unthunk,
)

from ._higher_order import _add
from ._numpy_linear import dense, project_nested, tangent_dtype
from ._util import asarray, is_zero

__all__: list[str] = []

_NO = NoTangent()
_ZERO = ZeroTangent()


# --- apply_along_axis ---------------------------------------------------------------------


def _slices(arr: Any, axis: Any) -> tuple[np.ndarray, int, tuple]:
    """``arr`` with ``axis`` moved last, the axis, and the shape of the loop over slices."""
    a = np.asanyarray(arr)
    ax = normalize_axis_index(axis, a.ndim)
    moved = np.moveaxis(a, ax, -1)
    if 0 in moved.shape[:-1]:
        np.apply_along_axis(len, axis, a)  # numpy's error for an empty loop
    return moved, ax, moved.shape[:-1]


def _lay_out(results: list, outer: tuple, ax: int) -> np.ndarray:
    """numpy's layout of the per-slice results: their axes in place of ``axis``."""
    first = np.asanyarray(results[0])
    buff = np.empty(outer + first.shape, first.dtype)
    for idx, r in zip(np.ndindex(outer), results):
        buff[idx] = r
    r_axes = range(len(outer), len(outer) + first.ndim)
    return np.moveaxis(buff, r_axes, range(ax, ax + first.ndim))


def _per_slice(t: Any, outer: tuple, ax: int, r_ndim: int) -> np.ndarray:
    """The inverse of ``_lay_out``: the result's axes moved back to the end."""
    t = asarray(t)
    return np.moveaxis(t, range(ax, ax + r_ndim), range(len(outer), len(outer) + r_ndim))


@rrule.register(np.apply_along_axis, config=HasReverseMode)
def apply_along_axis_rrule(
    config: Any, func1d: Any, axis: Any, arr: Any, *args: Any, **kw: Any
) -> Any:
    """rrule of ``np.apply_along_axis``: ``func1d`` on each slice, through the AD."""
    moved, ax, outer = _slices(arr, axis)
    results, pbs = [], []
    for idx in np.ndindex(outer):
        r, pb = rrule_via_ad(config, func1d, moved[idx], *args, **kw)
        results.append(r)
        pbs.append(pb)
    y = _lay_out(results, outer, ax)
    r_ndim = np.ndim(results[0])

    def apply_along_axis_pullback(ȳ: Any) -> tuple:
        ȳ = unthunk(ȳ)
        if is_zero(ȳ) or y.dtype.kind in "biu":
            zero = _NO if y.dtype.kind in "biu" else _ZERO
            return (_NO, zero, _NO, zero, *(zero for _ in args))
        per = _per_slice(np.broadcast_to(ȳ, y.shape), outer, ax, r_ndim)
        dmoved = np.zeros(moved.shape, np.result_type(tangent_dtype(moved), per.dtype))
        df: Any = _ZERO
        dargs: list = [_ZERO] * len(args)
        for idx, pb in zip(np.ndindex(outer), pbs):
            d_f, d_slice, *d_args = pb(per[idx])
            df = _add(df, d_f)
            d_slice = unthunk(d_slice)
            if not is_zero(d_slice):
                dmoved[idx] = d_slice
            dargs = [_add(d, e) for d, e in zip(dargs, d_args)]
        darr = project_nested(arr, np.moveaxis(dmoved, -1, ax))
        dargs = [d if is_zero(d) else project_nested(a, d) for d, a in zip(dargs, args)]
        return (_NO, df, _NO, darr, *dargs)

    return y, apply_along_axis_pullback


@frule.register(np.apply_along_axis, config=HasForwardsMode)
def apply_along_axis_frule(config: Any, ḟ: Any, *rest: Any, **kw: Any) -> Any:
    """frule of ``np.apply_along_axis``: each slice's tangent through ``frule_via_ad``."""
    n = len(rest) // 2
    (ḟunc, _, ȧrr, *ȧrgs), (func1d, axis, arr, *args) = rest[:n], rest[n:]
    moved, ax, outer = _slices(arr, axis)
    ṁoved = np.moveaxis(dense(ȧrr, arr), ax, -1)
    results, tangents = [], []
    for idx in np.ndindex(outer):
        inputs = (ḟunc, ṁoved[idx], *ȧrgs)
        r, ṙ = frule_via_ad(config, inputs, func1d, moved[idx], *args, **kw)
        results.append(r)
        tangents.append(dense(ṙ, r))
    y = _lay_out(results, outer, ax)
    if y.dtype.kind in "biu":
        return y, _NO
    ẏ = _lay_out([asarray(t, tangent_dtype(y)) for t in tangents], outer, ax)
    return y, project_nested(y, ẏ)


# --- apply_over_axes ----------------------------------------------------------------------


def _over_axes(a: np.ndarray, axes: Any) -> list[int]:
    return [ax + a.ndim if ax < 0 else ax for ax in np.atleast_1d(asarray(axes)).tolist()]


def _put_back(val: Any, res: Any, ax: int) -> tuple[Any, bool]:
    """numpy's rule: a result with one axis fewer gets it back (length 1)."""
    res = np.asanyarray(res)
    if res.ndim == val.ndim:
        return res, False
    if res.ndim == val.ndim - 1:
        return np.expand_dims(res, ax), True
    raise ValueError("function is not returning an array of the correct shape")


@rrule.register(np.apply_over_axes, config=HasReverseMode)
def apply_over_axes_rrule(config: Any, func: Any, a: Any, axes: Any) -> Any:
    """rrule of ``np.apply_over_axes``: the chain of calls, each through the AD."""
    val = np.asanyarray(a)
    steps = []
    for ax in _over_axes(val, axes):
        res, pb = rrule_via_ad(config, func, val, ax)
        val, expanded = _put_back(val, res, ax)
        steps.append((pb, ax, expanded))

    def apply_over_axes_pullback(ȳ: Any) -> tuple:
        ȳ = unthunk(ȳ)
        if is_zero(ȳ):
            return (_NO, _ZERO, _ZERO, _NO)
        df: Any = _ZERO
        for pb, ax, expanded in reversed(steps):
            if expanded:
                ȳ = np.squeeze(asarray(ȳ), ax)
            d_f, ȳ, _ = pb(ȳ)
            df = _add(df, d_f)
            ȳ = unthunk(ȳ)
            if is_zero(ȳ):
                return (_NO, df, ȳ, _NO)
        return (_NO, df, project_nested(a, ȳ), _NO)

    return val, apply_over_axes_pullback


@frule.register(np.apply_over_axes, config=HasForwardsMode)
def apply_over_axes_frule(
    config: Any, ḟ: Any, ḟunc: Any, ȧ: Any, ȧxes: Any, func: Any, a: Any, axes: Any
) -> Any:
    """frule of ``np.apply_over_axes``."""
    val = np.asanyarray(a)
    v̇ = dense(ȧ, a)
    for ax in _over_axes(val, axes):
        res, ṙ = frule_via_ad(config, (ḟunc, v̇, _NO), func, val, ax)
        val, expanded = _put_back(val, res, ax)
        v̇ = dense(ṙ, res)
        if expanded:
            v̇ = np.expand_dims(v̇, ax)
    return val, project_nested(val, v̇)
