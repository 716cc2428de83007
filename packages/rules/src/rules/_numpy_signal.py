"""Rules for numpy's interpolation and signal functions: ``interp``, ``convolve``,
``correlate``, ``polyval``, ``sinc``, ``i0``, ``nan_to_num``.

Decisions:

* Differentiable arguments passed positionally get cotangents (keyword
  arguments get no derivative, the ChainRules convention): all of ``interp``'s
  ``x``, ``xp``, ``fp``, ``left``, ``right`` and ``period``, and
  ``nan_to_num``'s replacement values.
* ``interp`` is piecewise linear: the derivative in ``x`` is the slope of the
  segment (0 outside ``xp``'s range, where ``left``/``right`` hold); at a
  knot it is the slope of the segment to its right.
* ``correlate`` conjugates its second argument (``c_k = Σ a[n+k]·conj(v[n])``),
  so it is anti-holomorphic in ``v``; its cotangent follows ChainRules'
  convention. ``convolve`` is holomorphic in both arguments.
* ``sinc``'s derivative near 0 comes from its series (no cancellation);
  ``i0``'s derivative is ``i1``, summed from its power series (all terms of
  one sign, so accurate), since numpy has no ``i1``.
* ``nan_to_num`` passes finite entries through (derivative 1) and replaces
  the others by constants: their cotangent goes to ``nan``/``posinf``/
  ``neginf`` when those are passed positionally. ``copy=False`` is refused:
  it writes into the caller's array, which a rule cannot see.

Differences and integrals (``diff``, ``gradient``, ``trapezoid``) are in
:mod:`rules._numpy_differences`.

>>> import numpy as np
>>> from rulescore import rrule
>>> y, pb = rrule(np.interp, 0.25, np.array([0.0, 1.0]), np.array([2.0, 6.0]))
>>> y, pb(1.0)[1:]   # ∂/∂x is the slope 4; fp's entries get 1 - t and t
(np.float64(3.0), (4.0, array([-3., -1.]), array([0.75, 0.25])))
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from rulescore import NoTangent, ZeroTangent, frule, rrule, unthunk

from ._numpy_differences import dense_tangent, optional_tangent
from ._numpy_elementwise import _name, _register_holomorphic, conj_if_complex
from ._numpy_linear import register_bilinear
from ._numpy_order_statistics import scatter_add
from ._numpy_reductions import bind_options
from ._numpy_statistics import argument, split_tangents
from ._util import asarray, is_zero, project, unbroadcast

__all__ = []

_NO = NoTangent()
_ZERO = ZeroTangent()


# --- interp -----------------------------------------------------------------------------

_INTERP_ARGS = ("left", "right", "period")


def _interp_parts(x: np.ndarray, xp: np.ndarray, fp: np.ndarray) -> tuple:
    """For each ``x``: the segment ``j`` (knots j, j+1), the fraction ``t`` along it,
    its slope, and whether ``x`` lies below, inside or above ``xp``'s range."""
    n = xp.size
    j = np.clip(np.searchsorted(xp, x, side="right") - 1, 0, max(n - 2, 0))
    below, above = x < xp[0], x > xp[-1]
    inside = ~(below | above | np.isnan(x))
    if n == 1:
        zero = np.zeros(np.shape(x))
        return j, zero, zero.astype(fp.dtype), below, inside, above
    with np.errstate(divide="ignore", invalid="ignore"):
        width = xp[j + 1] - xp[j]
        t = np.where(inside, (x - xp[j]) / width, 0.0)
        slope = np.where(inside, (fp[j + 1] - fp[j]) / width, 0)
    return j, t, slope, below, inside, above


def _periodic_layout(x: Any, xp: Any, fp: Any, period: Any) -> tuple:
    """numpy.interp's periodic preparation: reduced ``x``, the extended sorted ``xp``
    and ``fp``, the original index of each extended knot, and the derivatives of
    the reduced ``x`` and extended ``xp`` with respect to ``period``."""
    P = abs(float(period))
    X, XP = asarray(x, dtype=np.float64), asarray(xp, dtype=np.float64)
    order = np.argsort(XP % P)
    src = np.concatenate([order[-1:], order, order[:1]])
    xr = X % P
    xpe = (XP % P)[src] + np.concatenate([[-P], np.zeros(order.size), [P]])
    sign = np.sign(float(period))
    dxr = -np.floor(X / P) * sign
    dxpe = (-np.floor(XP / P)[src] + np.concatenate([[-1.0], np.zeros(order.size), [1.0]])) * sign
    return xr, xpe, asarray(fp)[src], src, dxr, dxpe


def _interp_setup(x: Any, xp: Any, fp: Any, period: Any) -> tuple:
    """The arrays the interpolation runs on and the maps back to the arguments."""
    if period is None:
        XP = asarray(xp, dtype=np.float64)
        return asarray(x, dtype=np.float64), XP, asarray(fp), None, None, None
    return _periodic_layout(x, xp, fp, period)


def interp_rrule(x: Any, xp: Any, fp: Any, *args: Any, **kwargs: Any) -> Any:
    """rrule of ``np.interp``: piecewise linear in ``x``, ``xp``, ``fp``, ``left``,
    ``right`` (and ``period``)."""
    bind_options(np.interp, _INTERP_ARGS, args, kwargs)  # validates the call
    left, right = argument(args, kwargs, 0, "left"), argument(args, kwargs, 1, "right")
    period = argument(args, kwargs, 2, "period")
    Ω = np.interp(x, xp, fp, *args, **kwargs)

    def interp_pullback(ȳ: Any) -> tuple:
        ȳ = unthunk(ȳ)
        rest: list = [_ZERO if v is not None else _NO for v in args]
        if is_zero(ȳ):
            return (_NO, _ZERO, _ZERO, _ZERO, *rest)
        X, XP, FP, src, dxr, dxpe = _interp_setup(x, xp, fp, period)
        g = np.broadcast_to(asarray(ȳ), np.shape(X))
        j, t, slope, below, inside, above = _interp_parts(X, XP, FP)
        n = XP.size
        gi = np.where(inside, g, 0)
        dx = np.real(gi * np.conj(slope))
        dfp = scatter_add(j.ravel(), (gi * (1 - t)).ravel(), n)
        dfp = dfp + scatter_add(np.minimum(j + 1, n - 1).ravel(), (gi * t).ravel(), n)
        gs = np.real(gi * np.conj(slope))
        dxp = scatter_add(j.ravel(), (-gs * (1 - t)).ravel(), n)
        dxp = dxp + scatter_add(np.minimum(j + 1, n - 1).ravel(), (-gs * t).ravel(), n)
        if src is None:
            for value, mask, slot, knot in ((left, below, 0, 0), (right, above, 1, n - 1)):
                total = np.sum(np.where(mask, g, 0))
                if value is None:
                    dfp[knot] += total
                elif slot < len(args):
                    rest[slot] = project(value, total)
        else:
            if len(args) > 2:
                rest[2] = project(period, np.sum(dx * dxr) + np.sum(dxp * dxpe))
            dfp = scatter_add(src, dfp, src.size - 2)
            dxp = scatter_add(src, dxp, src.size - 2)
        return (
            _NO,
            project(x, np.reshape(dx, np.shape(x))),
            project(xp, dxp),
            project(fp, dfp),
            *rest,
        )

    return Ω, interp_pullback


def interp_frule(ḟ: Any, *args: Any, **kwargs: Any) -> Any:
    """frule of ``np.interp``."""
    tangents, (x, xp, fp, *extra) = split_tangents(args)
    bind_options(np.interp, _INTERP_ARGS, tuple(extra), kwargs)  # validates the call
    left, right = argument(extra, kwargs, 0, "left"), argument(extra, kwargs, 1, "right")
    Ω = np.interp(x, xp, fp, *extra, **kwargs)
    ṫ = [optional_tangent(tangents, i) for i in range(len(tangents))]
    if all(is_zero(t) for t in ṫ):
        return Ω, _ZERO
    X, XP, FP, src, dxr, dxpe = _interp_setup(x, xp, fp, argument(extra, kwargs, 2, "period"))
    ẋ = dense_tangent(ṫ[0], np.shape(x)).astype(np.float64)
    ẋp = dense_tangent(ṫ[1], np.shape(xp)).astype(np.float64)
    ḟp = dense_tangent(ṫ[2], np.shape(fp))
    if src is not None:
        ṗ = float(np.real(ṫ[5])) if len(ṫ) > 5 and not is_zero(ṫ[5]) else 0.0
        ẋ = ẋ + dxr * ṗ
        ẋp, ḟp = ẋp[src] + dxpe * ṗ, ḟp[src]
    j, t, slope, below, inside, above = _interp_parts(X, XP, FP)
    n = XP.size
    j1 = np.minimum(j + 1, n - 1)
    ẏ = (1 - t) * ḟp[j] + t * ḟp[j1] + slope * (ẋ - (1 - t) * ẋp[j] - t * ẋp[j1])
    ẏ = np.where(inside, ẏ, 0)
    if src is None:
        for value, mask, slot, knot in ((left, below, 3, 0), (right, above, 4, n - 1)):
            if value is None:
                ẏ = np.where(mask, ḟp[knot], ẏ)
            elif slot < len(ṫ) and not is_zero(ṫ[slot]):
                ẏ = np.where(mask, ṫ[slot], ẏ)
    return Ω, project(Ω, np.reshape(ẏ, np.shape(Ω)))


rrule.register(np.interp)(interp_rrule)
frule.register(np.interp)(interp_frule)


# --- convolve and correlate -------------------------------------------------------------

_MODES = {0: "valid", 1: "same", 2: "full"}


def _mode(rest: tuple, kw: dict, default: str) -> str:
    mode = rest[0] if rest else kw.get("mode", default)
    return _MODES.get(mode, mode) if isinstance(mode, int) else mode


def _as_full(ȳ: Any, n: int, m: int, mode: str, is_correlate: bool) -> np.ndarray:
    """``ȳ`` placed where its mode's output sits in the full output (zeros elsewhere)."""
    g = asarray(ȳ)
    if mode == "full":
        return g
    k = min(n, m)
    if mode == "valid":
        start = k - 1
    else:
        start = k // 2 if is_correlate and n < m else (k - 1) // 2
    full = np.zeros(n + m - 1, g.dtype)
    full[start : start + g.size] = g
    return full


def _signal_operands(a: Any, v: Any) -> tuple:
    return np.atleast_1d(asarray(a)), np.atleast_1d(asarray(v))


def _convolve_grad(which: int) -> Callable:
    def grad(ȳ: Any, a: Any, v: Any, *rest: Any, **kw: Any) -> np.ndarray:
        A, V = _signal_operands(a, v)
        full = _as_full(ȳ, A.size, V.size, _mode(rest, kw, "full"), False)
        # full: y_k = Σ a_i v_{k-i}, so ā_i = Σ_k ȳ_k conj(v_{k-i}) (and symmetrically)
        d = np.correlate(full, V if which == 0 else A, "valid")
        return np.reshape(d, np.shape(a if which == 0 else v))

    return _name(grad, f"convolve_grad_{'av'[which]}")


def _correlate_grad(which: int) -> Callable:
    def grad(ȳ: Any, a: Any, v: Any, *rest: Any, **kw: Any) -> np.ndarray:
        A, V = _signal_operands(a, v)
        n, m = A.size, V.size
        full = _as_full(ȳ, n, m, _mode(rest, kw, "valid"), True)
        # full: z_k = Σ_j a_{j+k-m+1} conj(v_j)
        if which == 0:
            d = np.convolve(full, V, "valid")
        else:
            # anti-holomorphic in v: v̄_j = Σ_k conj(z̄_k) a_{j+k-m+1}
            d = np.correlate(A, full, "full")[n - 1 : n - 1 + m]
        return np.reshape(d, np.shape(a if which == 0 else v))

    return _name(grad, f"correlate_grad_{'av'[which]}")


register_bilinear(np.convolve, _convolve_grad(0), _convolve_grad(1), "convolve")
register_bilinear(np.correlate, _correlate_grad(0), _correlate_grad(1), "correlate")


# --- polyval ----------------------------------------------------------------------------


def _polyder_values(P: np.ndarray, X: Any) -> Any:
    """p'(x) (0 for a constant polynomial)."""
    n = P.size
    return np.polyval(P[:-1] * np.arange(n - 1, 0, -1), X) if n > 1 else np.zeros(np.shape(X))


def _powers(X: Any, n: int) -> np.ndarray:
    """``x ** (n-1), ..., x, 1`` along a new last axis: ∂polyval/∂p."""
    return asarray(X)[..., None] ** np.arange(n - 1, -1, -1)


@rrule.register(np.polyval)
def polyval_rrule(p: Any, x: Any) -> Any:
    """rrule of ``np.polyval``: ``∂/∂p_k = x^(n-1-k)``, ``∂/∂x = p'(x)``."""
    Ω = np.polyval(p, x)

    def polyval_pullback(ȳ: Any) -> tuple:
        ȳ = unthunk(ȳ)
        if is_zero(ȳ):
            return (_NO, _ZERO, _ZERO)
        P = asarray(p)
        g = np.broadcast_to(asarray(ȳ), np.shape(Ω))
        V = _powers(np.broadcast_to(x, np.shape(Ω)), P.size)
        dp = np.sum(g[..., None] * conj_if_complex(V), axis=tuple(range(g.ndim)))
        dx = unbroadcast(x, g * conj_if_complex(_polyder_values(P, x)))
        return (_NO, project(p, dp), dx)

    return Ω, polyval_pullback


@frule.register(np.polyval)
def polyval_frule(ḟ: Any, ṗ: Any, ẋ: Any, p: Any, x: Any) -> Any:
    """frule of ``np.polyval``: ``polyval(ṗ, x) + p'(x)·ẋ``."""
    Ω = np.polyval(p, x)
    ṗ, ẋ = unthunk(ṗ), unthunk(ẋ)
    if is_zero(ṗ) and is_zero(ẋ):
        return Ω, _ZERO
    dΩ: Any = 0
    if not is_zero(ṗ):
        dΩ = np.polyval(asarray(ṗ), x)
    if not is_zero(ẋ):
        dΩ = dΩ + _polyder_values(asarray(p), x) * ẋ
    return Ω, project(Ω, np.broadcast_to(dΩ, np.shape(Ω)))


# --- sinc and i0 ------------------------------------------------------------------------


def _sinc_d(x: Any, Ω: Any) -> Any:
    """sinc'(x) = (cos πx - sinc x)/x, from its series -π²x/3 + π⁴x³/30 near 0 (where
    the formula cancels), in double precision."""
    x = asarray(x)
    x = x.astype(np.result_type(x, np.float64))
    y = np.pi * x
    small = np.abs(y) < 1e-2
    with np.errstate(divide="ignore", invalid="ignore"):
        formula = (np.cos(y) - np.sinc(x)) / x
    return np.where(small, -(np.pi * y / 3) * (1 - y * y / 10), formula)


def _i1(x: Any, Ω: Any = None) -> Any:
    """The modified Bessel function I₁, i0's derivative: Σ (x/2)^(2k+1) / (k!(k+1)!).

    Every term has the sign of x, so the partial sums carry no cancellation; the
    loop runs until the terms no longer change the sum (about |x|/2 + 20 terms).
    """
    half = asarray(x, dtype=np.float64) / 2
    q = half * half
    term = half
    total = half
    k = 0
    while np.any(np.abs(term) > 1e-17 * np.abs(total)):
        k += 1
        term = term * q / (k * (k + 1))
        total = total + term
    return total


_register_holomorphic(np.sinc, _sinc_d)
_register_holomorphic(np.i0, _i1)


# --- nan_to_num -------------------------------------------------------------------------

_NAN_TO_NUM_ARGS = ("copy", "nan", "posinf", "neginf")
_REPLACEMENTS = (("nan", np.isnan, 1), ("posinf", np.isposinf, 2), ("neginf", np.isneginf, 3))


def _nan_to_num_opts(args: tuple, kwargs: dict) -> dict:
    opts = bind_options(np.nan_to_num, _NAN_TO_NUM_ARGS, args, kwargs)
    if opts.get("copy", True) is False:
        raise TypeError(
            "the rule for numpy.nan_to_num does not support copy=False: it writes into "
            "the caller's array, which the AD cannot see.\nTo fix: call "
            "numpy.nan_to_num(x) (copy=True) and use its result."
        )
    return opts


def _real_parts(t: Any, complex_: bool) -> tuple:
    t = asarray(t)
    return (np.real(t), np.imag(t)) if complex_ else (t,)


@rrule.register(np.nan_to_num)
def nan_to_num_rrule(x: Any, *args: Any, **kwargs: Any) -> Any:
    """rrule of ``np.nan_to_num``: 1 on finite entries; the replaced ones feed the
    positional replacement values."""
    _nan_to_num_opts(args, kwargs)
    Ω = np.nan_to_num(x, *args, **kwargs)

    def nan_to_num_pullback(ȳ: Any) -> tuple:
        ȳ = unthunk(ȳ)
        rest: list = [_NO] * len(args)
        for _, _, slot in _REPLACEMENTS:
            if slot < len(args) and args[slot] is not None:
                rest[slot] = _ZERO
        if is_zero(ȳ):
            return (_NO, _ZERO, *rest)
        X = asarray(x)
        cplx = X.dtype.kind == "c"
        parts, grads = _real_parts(X, cplx), _real_parts(ȳ, cplx)
        kept = [np.where(np.isfinite(p), g, 0) for p, g in zip(parts, grads)]
        dx = kept[0] + 1j * kept[1] if cplx else kept[0]
        for _, test, slot in _REPLACEMENTS:
            if slot < len(args) and args[slot] is not None:
                total = sum(np.sum(np.where(test(p), g, 0)) for p, g in zip(parts, grads))
                rest[slot] = project(args[slot], total)
        return (_NO, project(x, dx), *rest)

    return Ω, nan_to_num_pullback


@frule.register(np.nan_to_num)
def nan_to_num_frule(ḟ: Any, *args: Any, **kwargs: Any) -> Any:
    """frule of ``np.nan_to_num``."""
    tangents, (x, *extra) = split_tangents(args)
    _nan_to_num_opts(tuple(extra), kwargs)
    Ω = np.nan_to_num(x, *extra, **kwargs)
    ẋ = optional_tangent(tangents, 0)
    fills = {slot: optional_tangent(tangents, 1 + slot) for _, _, slot in _REPLACEMENTS}
    if is_zero(ẋ) and all(is_zero(t) for t in fills.values()):
        return Ω, _ZERO
    X = asarray(x)
    cplx = X.dtype.kind == "c"
    parts = _real_parts(X, cplx)
    tans = _real_parts(dense_tangent(ẋ, X.shape), cplx)
    out = []
    for p, t in zip(parts, tans):
        o = np.where(np.isfinite(p), t, 0.0)
        for _, test, slot in _REPLACEMENTS:
            if not is_zero(fills[slot]):
                o = np.where(test(p), np.real(fills[slot]), o)
        out.append(o)
    dΩ = out[0] + 1j * out[1] if cplx else out[0]
    return Ω, project(Ω, dΩ)
