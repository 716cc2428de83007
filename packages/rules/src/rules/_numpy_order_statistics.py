"""Rules for numpy's order statistics: ``median``, ``nanmedian``, ``quantile``,
``percentile``, ``nanquantile``, ``nanpercentile``.

An order statistic is linear in the sorted values of its slice: ``quantile`` at
``q`` is ``(1-g)·v[lo] + g·v[lo+1]``, where ``lo + g`` is the position that
numpy's ``method`` picks. Every method is supported: the position is read off
numpy's own ``quantile`` of ``0, 1, ..., n-1``, so the rules follow numpy's
conventions exactly.

Decisions:

* Tied values share their positions' cotangent equally, as ``np.max`` splits
  it among tied maxima. A slice holding a NaN has a NaN result (plain
  functions) and its NaN entries share the cotangent (``np.max``'s convention
  again); the nan-functions skip NaNs, and an all-NaN slice gets zeros.
* ``q`` is differentiable: ``∂/∂q = (dh/dq)·(v[lo+1] - v[lo])`` for the methods
  whose position ``h`` moves continuously with ``q`` (``linear``: ``dh/dq =
  n-1``; ``hazen``, ``weibull``, ``median_unbiased``, ``normal_unbiased``,
  ``interpolated_inverted_cdf``; ``/100`` for percentiles) and 0 where ``h``
  is clipped to the ends; the step-function methods (``lower``, ``higher``,
  ``nearest``, ``midpoint``, ``inverted_cdf``, ...) give 0.
* With ``weights=`` (numpy allows it for ``inverted_cdf``) the result is one of
  the entries, which gets the cotangent (shared with its ties).
* ``overwrite_input=True`` gives numpy's value, but the rules never let numpy
  reorder the caller's array (a rule cannot see an in-place write).

>>> import numpy as np
>>> from rulescore import rrule
>>> y, pb = rrule(np.median, np.array([3.0, 1.0, 3.0, 0.0, 5.0]))
>>> y, pb(1.0)[1]   # the two tied 3s share the cotangent
(np.float64(3.0), array([0.5, 0. , 0.5, 0. , 0. ]))
>>> y, pb = rrule(np.quantile, np.array([0.0, 1.0, 4.0]), 0.75)   # between 1 and 4
>>> y, pb(1.0)[1:]   # ∂/∂q = (n - 1)·(4 - 1)
(np.float64(2.5), (array([0. , 0.5, 0.5]), 6.0))
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from rulescore import NoTangent, ZeroTangent, frule, rrule, unthunk

from ._numpy_elementwise import _name
from ._numpy_reductions import bind_options, reduced_axes
from ._numpy_statistics import split_tangents
from ._util import asarray, is_zero, project

__all__ = ["scatter_add", "tie_average"]

_NO = NoTangent()
_ZERO = ZeroTangent()


def scatter_add(idx: Any, vals: Any, size: int) -> np.ndarray:
    """``out[idx[i]] += vals[i]`` into zeros of length ``size`` (complex values too)."""
    vals = asarray(vals)
    if vals.dtype.kind == "c":
        re = np.bincount(idx, vals.real, minlength=size)
        return re + 1j * np.bincount(idx, vals.imag, minlength=size)
    return np.bincount(idx, vals, minlength=size)


def tie_average(c: np.ndarray, v: np.ndarray) -> np.ndarray:
    """``c`` averaged over each run of equal values of the sorted rows ``v`` (shape (K, m)).

    Tied entries share what their positions receive, as ``np.max`` splits its
    cotangent among tied maxima; NaNs never tie.

    >>> tie_average(np.array([[1.0, 0.0, 4.0]]), np.array([[2.0, 2.0, 3.0]]))
    array([[0.5, 0.5, 4. ]])
    """
    k, m = v.shape
    if m < 2 or k == 0:
        return c
    new = np.ones((k, m), bool)
    new[:, 1:] = v[:, 1:] != v[:, :-1]
    if new.all():
        return c
    gid = np.cumsum(new.ravel()) - 1  # every row starts a new group
    n_groups = int(gid[-1]) + 1
    sums = scatter_add(gid, np.ravel(c), n_groups)
    return (sums / np.bincount(gid, minlength=n_groups))[gid].reshape(k, m)


_QUANTILE_ARGS = ("axis", "out", "overwrite_input", "method", "keepdims")  # after a, q
_MEDIAN_ARGS = ("axis", "out", "overwrite_input", "keepdims")

# dh/dq = n + offset for the methods whose position h moves continuously with q
# (numpy's n + 1 - alpha - beta); the other methods are step functions of q.
_SLOPE_OFFSET = {
    "linear": -1.0,
    "hazen": 0.0,
    "weibull": 1.0,
    "interpolated_inverted_cdf": 0.0,
    "median_unbiased": 1.0 / 3.0,
    "normal_unbiased": 0.25,
}


def _slices(x: Any, axis: Any) -> tuple:
    """``x`` with the reduced axes moved last and merged, as a (K, m) array; and the
    permutation and shape that undo it."""
    x = asarray(x)
    axes = reduced_axes(axis, x.ndim)
    kept = tuple(i for i in range(x.ndim) if i not in axes)
    perm = kept + axes
    xt = np.transpose(x, perm)
    k = math.prod(xt.shape[: len(kept)])
    return xt.reshape(k, math.prod(xt.shape[len(kept) :])), perm, xt.shape


def _unslice(c: np.ndarray, perm: tuple, tshape: tuple) -> np.ndarray:
    return np.transpose(c.reshape(tshape), np.argsort(perm))


def _positions(v: np.ndarray, q: Any, spec: dict, Ω: Any) -> tuple:
    """Where each output sits in its sorted slice: ``lo``, ``hi``, ``g`` (the weight
    of ``hi``), ``dh`` (dh/dq) and ``live`` (outputs that depend on the entries),
    each of shape (Q, K), plus the slices holding NaNs (plain functions only)."""
    k, m = v.shape
    nan = np.isnan(v)
    n = m - np.sum(nan, axis=1) if spec["skip_nan"] else np.full(k, m)
    nan_rows = nan[:, -1] if m and not spec["skip_nan"] else np.zeros(k, bool)
    qs = np.ravel(q)
    shape = (qs.size, k)
    lo, g, dh = np.zeros(shape, np.intp), np.zeros(shape), np.zeros(shape)
    if spec.get("weights") is not None:
        # inverted_cdf with weights picks an entry: the first position holding the result
        Ωs = np.reshape(Ω, shape)
        lo = np.sum(v[None] < Ωs[..., None], axis=-1)
    else:
        method = spec["method"]
        for nk in np.unique(n):
            if nk == 0:
                continue
            h = np.ravel(spec["quantile"](np.arange(nk, dtype=np.float64), qs, method=method))
            cols = n == nk
            base = np.floor(h)
            lo[:, cols] = base[:, None].astype(np.intp)
            g[:, cols] = (h - base)[:, None]
            if method in _SLOPE_OFFSET:
                s = np.where((h > 0) & (h < nk - 1), nk + _SLOPE_OFFSET[method], 0.0)
                dh[:, cols] = s[:, None] * spec["scale"]
    hi = np.minimum(lo + 1, np.maximum(n - 1, 0))
    lo = np.minimum(lo, np.maximum(n - 1, 0))
    live = np.broadcast_to((n > 0) & ~nan_rows, shape)
    return lo, hi, np.where(live, g, 0.0), np.where(live, dh, 0.0), live, nan_rows


def _sorted_slices(x: Any, axis: Any) -> tuple:
    xs, perm, tshape = _slices(x, axis)
    order = np.argsort(xs, axis=1, kind="stable")
    return order, np.take_along_axis(xs, order, axis=1), perm, tshape


def _order_pullback(x: Any, ȳ: Any, spec: dict, Ω: Any) -> tuple:
    """Cotangents of the data and of ``q`` for an order statistic."""
    order, v, perm, tshape = _sorted_slices(x, spec["axis"])
    k, m = v.shape
    if m == 0:  # empty slices: NaN results that depend on nothing
        return np.zeros(np.shape(x)), np.zeros(np.size(spec["q"]))
    lo, hi, g, dh, live, nan_rows = _positions(v, spec["q"], spec, Ω)
    ȳ2 = np.reshape(ȳ, lo.shape)
    ȳ_live = np.where(live, ȳ2, 0)
    rows = np.arange(k)[None, :] * m
    idx = np.concatenate([(rows + lo).ravel(), (rows + hi).ravel()])
    c = scatter_add(idx, np.concatenate([(ȳ_live * (1 - g)).ravel(), (ȳ_live * g).ravel()]), k * m)
    c = tie_average(c.reshape(k, m), v)
    if nan_rows.any():  # a NaN result: its NaN entries share the cotangent
        nan = np.isnan(v)
        share = np.sum(ȳ2, axis=0) / np.maximum(np.sum(nan, axis=1), 1)
        c = np.where(nan_rows[:, None] & nan, share[:, None], c)
    dx = _unslice(np.take_along_axis(c, np.argsort(order, axis=1), axis=1), perm, tshape)
    dq = np.sum(np.real(ȳ_live * _q_slope(v, lo, hi, dh)), axis=1)
    return dx, dq


def _q_slope(v: np.ndarray, lo: np.ndarray, hi: np.ndarray, dh: np.ndarray) -> np.ndarray:
    """∂(output)/∂q = dh/dq · (v[hi] - v[lo]), (Q, K); 0 where dh is (NaN gaps too)."""
    rows = np.arange(v.shape[0])[None, :]
    with np.errstate(invalid="ignore"):
        return np.where(dh == 0, 0, (v[rows, hi] - v[rows, lo]) * dh)


def _order_pushforward(x: Any, ẋ: Any, q̇: Any, spec: dict, Ω: Any) -> Any:
    order, v = _sorted_slices(x, spec["axis"])[:2]
    k, m = v.shape
    if m == 0:
        return np.zeros(np.shape(Ω))
    lo, hi, g, dh, live, nan_rows = _positions(v, spec["q"], spec, Ω)
    ẋs = np.take_along_axis(_slices(np.broadcast_to(ẋ, np.shape(x)), spec["axis"])[0], order, 1)
    ẋs = tie_average(ẋs, v)
    rows = np.arange(k)[None, :]
    ẏ = np.where(live, (1 - g) * ẋs[rows, lo] + g * ẋs[rows, hi], 0)
    if nan_rows.any():
        nan = np.isnan(v)
        mean_nan = np.sum(np.where(nan, ẋs, 0), axis=1) / np.maximum(np.sum(nan, axis=1), 1)
        ẏ = np.where(nan_rows[None, :], mean_nan[None, :], ẏ)
    if not is_zero(q̇):
        ẏ = ẏ + _q_slope(v, lo, hi, dh) * np.reshape(q̇, (-1, 1))
    return ẏ.reshape(np.shape(Ω))


def _quantile_spec(f: Any, args: tuple, kwargs: dict, q: Any, quantile: Any) -> tuple:
    """The call's options, the keywords to compute it with, and the rule's settings."""
    opts = bind_options(f, _QUANTILE_ARGS, args, kwargs)
    call = {k: v for k, v in opts.items() if k != "overwrite_input"}  # never reorder x
    method = opts.get("method", "linear")
    weights = opts.get("weights")
    scale = 0.01 if quantile is np.percentile or quantile is np.nanpercentile else 1.0
    spec = {
        "axis": opts.get("axis"),
        "q": q,
        "method": method,
        "weights": weights,
        "quantile": quantile,
        "scale": scale,
        "skip_nan": f in (np.nanquantile, np.nanpercentile),
    }
    return call, spec


def _register_quantile(f: Any, quantile: Any) -> None:
    name = f.__name__

    def quantile_rrule(a: Any, q: Any, *args: Any, **kwargs: Any) -> Any:
        call, spec = _quantile_spec(f, args, kwargs, q, quantile)
        rest = (_NO,) * len(args)  # axis, out, overwrite_input, method, keepdims
        Ω = f(a, q, **call)

        def quantile_pullback(ȳ: Any) -> tuple:
            ȳ = unthunk(ȳ)
            if is_zero(ȳ):
                return (_NO, _ZERO, _ZERO, *rest)
            da, dq = _order_pullback(a, ȳ, spec, Ω)
            return (_NO, project(a, da), project(q, np.reshape(dq, np.shape(q))), *rest)

        return Ω, _name(quantile_pullback, f"{name}_pullback")

    def quantile_frule(ḟ: Any, *args: Any, **kwargs: Any) -> Any:
        (ȧ, q̇, *_), (a, q, *extra) = split_tangents(args)
        call, spec = _quantile_spec(f, tuple(extra), kwargs, q, quantile)
        Ω = f(a, q, **call)
        ȧ, q̇ = unthunk(ȧ), unthunk(q̇)
        if is_zero(ȧ) and is_zero(q̇):
            return Ω, _ZERO
        ẋ = np.zeros(np.shape(a)) if is_zero(ȧ) else ȧ
        return Ω, project(Ω, _order_pushforward(a, ẋ, q̇, spec, Ω))

    rrule.register(f)(_name(quantile_rrule, f"{name}_rrule"))
    frule.register(f)(_name(quantile_frule, f"{name}_frule"))


def _register_median(f: Any) -> None:
    name = f.__name__
    skip_nan = f is np.nanmedian

    def median_spec(args: tuple, kwargs: dict) -> tuple:
        opts = bind_options(f, _MEDIAN_ARGS, args, kwargs)
        call = {k: v for k, v in opts.items() if k != "overwrite_input"}
        spec = {
            "axis": opts.get("axis"),
            "q": 0.5,
            "method": "linear",
            "quantile": np.quantile,
            "scale": 1.0,
            "skip_nan": skip_nan,
        }
        return call, spec

    def median_rrule(a: Any, *args: Any, **kwargs: Any) -> Any:
        call, spec = median_spec(args, kwargs)
        rest = (_NO,) * len(args)
        Ω = f(a, **call)

        def median_pullback(ȳ: Any) -> tuple:
            ȳ = unthunk(ȳ)
            if is_zero(ȳ):
                return (_NO, _ZERO, *rest)
            return (_NO, project(a, _order_pullback(a, ȳ, spec, Ω)[0]), *rest)

        return Ω, _name(median_pullback, f"{name}_pullback")

    def median_frule(ḟ: Any, *args: Any, **kwargs: Any) -> Any:
        (ȧ, *_), (a, *extra) = split_tangents(args)
        call, spec = median_spec(tuple(extra), kwargs)
        Ω = f(a, **call)
        ȧ = unthunk(ȧ)
        if is_zero(ȧ):
            return Ω, _ZERO
        return Ω, project(Ω, _order_pushforward(a, ȧ, _ZERO, spec, Ω))

    rrule.register(f)(_name(median_rrule, f"{name}_rrule"))
    frule.register(f)(_name(median_frule, f"{name}_frule"))


for _f in (np.quantile, np.percentile, np.nanquantile, np.nanpercentile):
    _register_quantile(_f, _f)
_register_median(np.median)
_register_median(np.nanmedian)
