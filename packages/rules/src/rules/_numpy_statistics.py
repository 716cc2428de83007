"""Rules for numpy's statistics: nan-reductions, ``average``, ``cov`` and ``corrcoef``.

The nan-reductions are ``nansum``, ``nanprod``, ``nanmean``, ``nanvar``,
``nanstd``, ``nanmax``, ``nanmin``. Order statistics (``median``,
``quantile``, ...) are in :mod:`rules._numpy_order_statistics`, counting
(``unique``, ``bincount``, ``histogram``) in :mod:`rules._numpy_counting`.

Decisions:

* A nan-reduction is the plain reduction over the entries that are not NaN
  (``where=`` narrowed to them, so ties, zeros and ``ddof`` behave as in
  :mod:`rules._numpy_reductions`): NaN entries get a zero cotangent, and so
  does every entry of an all-NaN slice (its NaN result does not depend on them).
* ``average``'s ``weights`` are differentiable when passed positionally
  (``np.average(a, None, w)``: keyword arguments get no derivative; ``ad``
  passes ``weights=w`` by position itself), and so is
  the sum of weights it returns with ``returned=True``.
* ``cov`` and ``corrcoef`` are differentiable in ``m`` and a positional ``y``;
  frequency and analytic weights are data, not parameters. For complex data
  ``cov`` is not holomorphic (``C = D W Dᴴ / f``, ``D`` the centred data) and
  the cotangent follows ChainRules' convention: ``X̄ = (C̄ + C̄ᴴ) D W / f``.
  ``corrcoef``'s final clip to ``[-1, 1]`` only trims rounding and is treated
  as the identity.

>>> import numpy as np
>>> from rulescore import rrule
>>> rrule(np.nanmean, np.array([1.0, np.nan, 3.0]))[1](1.0)[1]
array([0.5, 0. , 0.5])
>>> y, pb = rrule(np.average, np.array([1.0, 3.0]), None, np.array([1.0, 3.0]))
>>> _, da, _, dw = pb(1.0)   # one cotangent each for a, axis and weights
>>> y, da, dw               # ∂/∂w = (a - avg) / Σw
(np.float64(2.5), array([0.25, 0.75]), array([-0.375,  0.125]))
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
from numpy.lib.array_utils import normalize_axis_tuple

from rulescore import NoTangent, Tangent, ZeroTangent, frule, non_differentiable, rrule, unthunk

from ._linalg_util import entries
from ._numpy_elementwise import _name, conj_if_complex
from ._numpy_reductions import (
    _count,
    _expand,
    _extremum_weights,
    _half_inverse,
    _initial,
    _keepdims,
    _others_product,
    _var_parts,
    _where_mask,
    bind_options,
    reduced_axes,
)
from ._util import asarray, is_zero, project

__all__ = ["argument", "split_tangents"]

_NO = NoTangent()
_ZERO = ZeroTangent()


def argument(args: tuple, kwargs: dict, index: int, name: str, default: Any = None) -> Any:
    """Optional argument ``index`` (0 = the first after the data) from ``args``, or
    ``name`` from ``kwargs``.

    Rules read the values that carry a derivative (weights, coordinates, ``y``)
    with this rather than from :func:`~rules._numpy_reductions.bind_options`'s
    dict, which is non-differentiable: an AD that differentiates a rule's body
    (second derivatives) must see them flow.
    """
    return args[index] if index < len(args) else kwargs.get(name, default)


def split_tangents(args: tuple) -> tuple:
    """An frule's ``(ẋ1, ..., x1, ...)`` as ``(tangents, primals)``."""
    n = len(args) // 2
    return args[:n], args[n:]


# --- nan-reductions -------------------------------------------------------------------

_NANSUM_ARGS = ("axis", "dtype", "out", "keepdims", "initial", "where")
_NANMEAN_ARGS = ("axis", "dtype", "out", "keepdims")  # where= is keyword-only
_NANVAR_ARGS = ("axis", "dtype", "out", "ddof", "keepdims")
_NANMAX_ARGS = ("axis", "out", "keepdims", "initial", "where")


def _present(x: Any, opts: dict) -> tuple[np.ndarray, dict, tuple]:
    """The mask of entries that count (not NaN, inside ``where=``), ``opts`` with it
    as ``where=``, and the reduced axes."""
    x = asarray(x)
    mask = ~np.isnan(x)
    user = _where_mask(opts, x.shape)
    if user is not None:
        mask &= user
    return mask, dict(opts, where=mask), reduced_axes(opts.get("axis"), x.ndim)


def _nansum_weights(x: Any, Ω: Any, opts: dict) -> tuple:
    mask, _, axes = _present(x, opts)
    return mask, axes


def _nanmean_weights(x: Any, Ω: Any, opts: dict) -> tuple:
    mask, _, axes = _present(x, opts)
    return mask / np.maximum(_count(mask.shape, axes, mask), 1), axes


def _nanprod_weights(x: Any, Ω: Any, opts: dict) -> tuple:
    mask, _, axes = _present(x, opts)
    return np.where(mask, _others_product(x, axes, mask) * _initial(opts), 0), axes


def _nanextremum_weights(x: Any, Ω: Any, opts: dict) -> tuple:
    _, masked, axes = _present(x, opts)
    return _extremum_weights(x, Ω, masked)[0], axes


def _spread_weights(x: Any, Ω: Any, opts: dict, is_std: bool) -> tuple:
    mask, masked, axes = _present(x, opts)
    _, d, dof = _var_parts(x, masked)
    w = d * (2 / asarray(dof, dtype=np.float64))
    if is_std:
        w = w * _half_inverse(_expand(Ω, axes, _keepdims(opts)))
    # all-NaN slices (and too few entries for ddof) give NaN results independent of x
    return np.where(mask, w, 0), axes


def _nanvar_weights(x: Any, Ω: Any, opts: dict) -> tuple:
    with np.errstate(all="ignore"):
        return _spread_weights(x, Ω, opts, is_std=False)


def _nanstd_weights(x: Any, Ω: Any, opts: dict) -> tuple:
    with np.errstate(all="ignore"):
        return _spread_weights(x, Ω, opts, is_std=True)


def _register_nan_reduction(f: Any, names: tuple, weights: Callable, real: bool) -> None:
    """Rules for ``f(x, ...) = Σ_slice w·x`` to first order, ``weights`` giving ``w``.

    ``real``: ``f`` is real-valued on complex input (var, std), so the pullback
    is ``Re(ȳ)·w`` and the pushforward ``Re Σ conj(w)·ẋ``; otherwise ``f`` is
    holomorphic, ``ȳ·conj(w)`` and ``Σ w·ẋ``.
    """
    name = f.__name__

    def nan_rrule(x: Any, *args: Any, **kwargs: Any) -> Any:
        opts = bind_options(f, names, args, kwargs)
        rest = (_NO,) * len(args)  # axis, dtype, ... passed positionally
        Ω = f(x, *args, **kwargs)

        def nan_pullback(ȳ: Any) -> tuple:
            ȳ = unthunk(ȳ)
            if is_zero(ȳ):
                return (_NO, _ZERO, *rest)
            w, axes = weights(x, Ω, opts)
            g = _expand(ȳ, axes, _keepdims(opts))
            dx = np.real(g) * w if real else g * conj_if_complex(w)
            return (_NO, project(x, dx), *rest)

        return Ω, _name(nan_pullback, f"{name}_pullback")

    def nan_frule(ḟ: Any, *args: Any, **kwargs: Any) -> Any:
        (ẋ, *_), (x, *extra) = split_tangents(args)
        opts = bind_options(f, names, tuple(extra), kwargs)
        Ω = f(x, *extra, **kwargs)
        ẋ = unthunk(ẋ)
        if is_zero(ẋ):
            return Ω, _ZERO
        w, axes = weights(x, Ω, opts)
        terms = np.real(np.conj(w) * ẋ) if real else w * ẋ
        return Ω, project(Ω, np.sum(terms, axis=axes, keepdims=_keepdims(opts)))

    rrule.register(f)(_name(nan_rrule, f"{name}_rrule"))
    frule.register(f)(_name(nan_frule, f"{name}_frule"))


for _f, _names, _weights, _real in (
    (np.nansum, _NANSUM_ARGS, _nansum_weights, False),
    (np.nanprod, _NANSUM_ARGS, _nanprod_weights, False),
    (np.nanmean, _NANMEAN_ARGS, _nanmean_weights, False),
    (np.nanvar, _NANVAR_ARGS, _nanvar_weights, True),
    (np.nanstd, _NANVAR_ARGS, _nanstd_weights, True),
    (np.nanmax, _NANMAX_ARGS, _nanextremum_weights, False),
    (np.nanmin, _NANMAX_ARGS, _nanextremum_weights, False),
):
    _register_nan_reduction(_f, _names, _weights, _real)


# --- average --------------------------------------------------------------------------

_AVERAGE_ARGS = ("axis", "weights", "returned")


def _weights_layout(a: np.ndarray, w: Any, axis: Any) -> tuple:
    """``w`` reshaped to broadcast against ``a`` (as numpy.average does), and the
    map from a cotangent broadcast to ``a``'s shape back to ``w``'s shape."""
    w = asarray(w)
    if w.shape == a.shape:
        return w, lambda dw: np.array(np.broadcast_to(dw, a.shape))
    axes = normalize_axis_tuple(axis, a.ndim)
    perm = np.argsort(axes)
    wt = np.transpose(w, perm)
    shape = tuple(s if i in axes else 1 for i, s in enumerate(a.shape))
    summed = tuple(i for i in range(a.ndim) if i not in axes)

    def back(dw: Any) -> Any:
        dw = np.sum(np.broadcast_to(dw, a.shape), axis=summed, keepdims=True)
        return np.transpose(np.reshape(dw, wt.shape), np.argsort(perm))

    return np.reshape(wt, shape), back


def _average_parts(a: Any, axis: Any, weights: Any) -> tuple:
    """``a`` as an array, the weights laid out to broadcast against it (None: equal),
    their sum per output (keepdims shape), the reduced axes and the map back to
    ``weights``' shape."""
    A = asarray(a)
    axes = reduced_axes(axis, A.ndim)
    if weights is None:
        return A, None, _count(A.shape, axes, None), axes, None
    w, back = _weights_layout(A, weights, axis)
    wsum = np.sum(np.broadcast_to(w, A.shape), axis=axes, keepdims=True)
    return A, w, wsum, axes, back


def average_rrule(a: Any, *args: Any, **kwargs: Any) -> Any:
    """rrule of ``np.average``: linear in ``a``; ``∂/∂w = (a - avg) / Σw``."""
    opts = bind_options(np.average, _AVERAGE_ARGS, args, kwargs)
    weights = argument(args, kwargs, 1, "weights")
    w_slot = len(args) >= 2 and args[1] is not None  # positional weights get a cotangent
    Ω = np.average(a, *args, **kwargs)
    returned = bool(opts.get("returned", False))

    def average_pullback(ȳ: Any) -> tuple:
        ȳ_avg, ȳ_sum = entries(ȳ, 2) if returned else (unthunk(ȳ), _ZERO)
        rest = [_NO] * len(args)
        if w_slot:
            rest[1] = _ZERO
        if is_zero(ȳ_avg) and (is_zero(ȳ_sum) or not w_slot):
            return (_NO, _ZERO, *rest)
        A, w, wsum, axes, back = _average_parts(a, opts.get("axis"), weights)
        keep = _keepdims(opts)
        da: Any = _ZERO
        dw: Any = 0
        if not is_zero(ȳ_avg):
            g = _expand(ȳ_avg, axes, keep)
            coef = 1 / wsum if w is None else w / wsum
            da = project(a, np.array(np.broadcast_to(g * conj_if_complex(coef), A.shape)))
            if w_slot:
                avg = _expand(Ω[0] if returned else Ω, axes, keep)
                dw = g * conj_if_complex((A - avg) / wsum)
        if w_slot:
            if not is_zero(ȳ_sum):
                dw = dw + _expand(ȳ_sum, axes, keep)
            rest[1] = project(weights, back(dw))
        return (_NO, da, *rest)

    return Ω, average_pullback


def average_frule(ḟ: Any, *args: Any, **kwargs: Any) -> Any:
    """frule of ``np.average``: ``(Σ w ȧ + Σ (a - avg) ẇ) / Σw``."""
    tangents, (a, *extra) = split_tangents(args)
    opts = bind_options(np.average, _AVERAGE_ARGS, tuple(extra), kwargs)
    Ω = np.average(a, *extra, **kwargs)
    returned = bool(opts.get("returned", False))
    ȧ = unthunk(tangents[0])
    ẇ = unthunk(tangents[2]) if len(tangents) > 2 and extra[1] is not None else _ZERO
    if is_zero(ȧ) and is_zero(ẇ):
        return Ω, _ZERO
    A, w, wsum, axes, _ = _average_parts(a, opts.get("axis"), argument(extra, kwargs, 1, "weights"))
    keep = _keepdims(opts)
    terms: Any = 0
    ṡ: Any = _ZERO
    if not is_zero(ȧ):
        terms = ȧ / wsum if w is None else ȧ * (w / wsum)
    if not is_zero(ẇ):
        ẇb = _weights_layout(A, ẇ, opts.get("axis"))[0]
        avg = _expand(Ω[0] if returned else Ω, axes, keep)
        terms = terms + (A - avg) * (ẇb / wsum)
        ṡ = np.sum(np.broadcast_to(ẇb, A.shape), axis=axes, keepdims=keep)
    dΩ = np.sum(np.broadcast_to(terms, A.shape), axis=axes, keepdims=keep)
    if not returned:
        return Ω, project(Ω, dΩ)
    if not is_zero(ṡ):
        ṡ = project(Ω[1], np.array(np.broadcast_to(ṡ, np.shape(Ω[1]))))
    return Ω, Tangent[tuple](project(Ω[0], dΩ), ṡ)


rrule.register(np.average)(average_rrule)
frule.register(np.average)(average_frule)


# --- covariance and correlation -------------------------------------------------------

_COV_ARGS = ("y", "rowvar", "bias", "ddof", "fweights", "aweights")
_CORRCOEF_ARGS = ("y", "rowvar")


def _cov_layout(m: Any, y: Any, rowvar: Any, dtype: Any) -> np.ndarray:
    """numpy.cov's (variables, observations) matrix ``X`` from ``m`` and ``y``."""
    X = np.array(m, ndmin=2, dtype=dtype)
    if not rowvar and np.ndim(m) != 1:
        X = X.T
    if y is not None:
        Y = np.array(y, ndmin=2, dtype=dtype)
        X = np.concatenate((X, Y.T if not rowvar and Y.shape[0] != 1 else Y), axis=0)
    return X


def _cov_setup(m: Any, y: Any, opts: dict) -> tuple:
    """numpy.cov's preparation: ``X``, the observation weights ``w`` (None: equal),
    the normaliser ``fact``, and the map from a cotangent of ``X`` back to
    ``(m̄, ȳ)``."""
    rowvar, dtype = opts.get("rowvar", True), opts.get("dtype")
    if dtype is None:
        dtype = np.result_type(asarray(m), np.float64, *(() if y is None else (y,)))
    X = _cov_layout(m, y, rowvar, dtype)
    ddof = opts.get("ddof")
    if ddof is None:
        ddof = 0 if opts.get("bias", False) else 1
    fw, aw = opts.get("fweights"), opts.get("aweights")
    w = None if fw is None else asarray(fw, dtype=float)
    if aw is not None:
        aw = asarray(aw, dtype=float)
        w = aw if w is None else w * aw
    if w is None:
        fact = X.shape[1] - ddof
    elif ddof == 0:
        fact = np.sum(w)
    elif aw is None:
        fact = np.sum(w) - ddof
    else:
        fact = np.sum(w) - ddof * np.sum(w * aw) / np.sum(w)
    rows_m = np.array(m, ndmin=2).shape[0 if rowvar or np.ndim(m) == 1 else 1]

    def back(dX: np.ndarray) -> tuple:
        dm = dX[:rows_m]
        dm = np.reshape(dm.T if not rowvar and np.ndim(m) != 1 else dm, np.shape(m))
        if y is None:
            return dm, None
        dy = dX[rows_m:]
        y_t = not rowvar and np.array(y, ndmin=2).shape[0] != 1
        return dm, np.reshape(dy.T if y_t else dy, np.shape(y))

    return X, w, max(fact, 0.0), back


def _centered(X: np.ndarray, w: Any) -> tuple:
    """``D = X - weighted mean`` along the observations, and ``D W`` (W = diag w)."""
    if w is None:
        D = X - np.mean(X, axis=1, keepdims=True)
        return D, D
    D = X - np.sum(X * w, axis=1, keepdims=True) / np.sum(w)
    return D, D * w


def _cov_value(X: np.ndarray, w: Any, fact: Any) -> np.ndarray:
    D, DW = _centered(X, w)
    with np.errstate(divide="ignore", invalid="ignore"):
        return D @ np.conj(DW.T) / fact


def _cov_pullback(C̄: Any, X: np.ndarray, w: Any, fact: Any) -> np.ndarray:
    """X̄ = (C̄ + C̄ᴴ) D W / f; the centring adds nothing since D w sums to 0."""
    C̄ = np.reshape(C̄, (X.shape[0], X.shape[0]))
    DW = _centered(X, w)[1]
    with np.errstate(divide="ignore", invalid="ignore"):
        return (C̄ + np.conj(C̄.T)) @ DW / fact


def _cov_pushforward(Ẋ: np.ndarray, X: np.ndarray, w: Any, fact: Any) -> np.ndarray:
    """Ċ = (Ḋ W Dᴴ + D W Ḋᴴ) / f."""
    DW = _centered(X, w)[1]
    Ḋ = _centered(Ẋ, w)[0]
    with np.errstate(divide="ignore", invalid="ignore"):
        return (Ḋ @ np.conj(DW.T) + DW @ np.conj(Ḋ.T)) / fact


def _data_tangent(tangents: tuple, m: Any, y: Any, extra: tuple, opts: dict) -> Any:
    """The tangent of ``X`` from those of ``m`` and a positional ``y`` (None: zero)."""
    ṁ = unthunk(tangents[0])
    ẏ = unthunk(tangents[1]) if len(tangents) > 1 and extra[0] is not None else _ZERO
    if is_zero(ṁ) and is_zero(ẏ):
        return None
    dm = np.zeros(np.shape(m)) if is_zero(ṁ) else asarray(ṁ)
    dy = None if y is None else np.zeros(np.shape(y)) if is_zero(ẏ) else asarray(ẏ)
    return _cov_layout(dm, dy, opts.get("rowvar", True), None)


def _y_cotangent(args: tuple, dy: Any) -> list:
    rest: list = [_NO] * len(args)
    if args and args[0] is not None:
        rest[0] = _ZERO if dy is None else project(args[0], dy)
    return rest


def cov_rrule(m: Any, *args: Any, **kwargs: Any) -> Any:
    """rrule of ``np.cov``: ``X̄ = (C̄ + C̄ᴴ) D W / f`` mapped back to ``m`` and ``y``."""
    opts = bind_options(np.cov, _COV_ARGS, args, kwargs)
    y = argument(args, kwargs, 0, "y")
    Ω = np.cov(m, *args, **kwargs)

    def cov_pullback(C̄: Any) -> tuple:
        C̄ = unthunk(C̄)
        if is_zero(C̄):
            return (_NO, _ZERO, *_y_cotangent(args, None))
        X, w, fact, back = _cov_setup(m, y, opts)
        dm, dy = back(_cov_pullback(C̄, X, w, fact))
        return (_NO, project(m, dm), *_y_cotangent(args, dy))

    return Ω, cov_pullback


def cov_frule(ḟ: Any, *args: Any, **kwargs: Any) -> Any:
    """frule of ``np.cov``."""
    tangents, (m, *extra) = split_tangents(args)
    opts = bind_options(np.cov, _COV_ARGS, tuple(extra), kwargs)
    y = argument(extra, kwargs, 0, "y")
    Ω = np.cov(m, *extra, **kwargs)
    Ẋ = _data_tangent(tangents, m, y, tuple(extra), opts)
    if Ẋ is None:
        return Ω, _ZERO
    X, w, fact, _ = _cov_setup(m, y, opts)
    return Ω, project(Ω, np.reshape(_cov_pushforward(Ẋ, X, w, fact), np.shape(Ω)))


rrule.register(np.cov)(cov_rrule)
frule.register(np.cov)(cov_frule)


def _correlation(X: np.ndarray) -> tuple:
    """``s = sqrt(Re diag C)`` and ``R = C / (s sᵀ)``, ``C`` the covariance."""
    C = _cov_value(X, None, X.shape[1] - 1)
    s = np.sqrt(np.real(np.diagonal(C)))
    with np.errstate(divide="ignore", invalid="ignore"):
        return s, C / s[:, None] / s[None, :]


def corrcoef_rrule(x: Any, *args: Any, **kwargs: Any) -> Any:
    """rrule of ``np.corrcoef``: through ``R = C / (s sᵀ)``, ``s = sqrt(Re diag C)``, and
    ``cov``'s pullback."""
    opts = bind_options(np.corrcoef, _CORRCOEF_ARGS, args, kwargs)
    y = argument(args, kwargs, 0, "y")
    Ω = np.corrcoef(x, *args, **kwargs)

    def corrcoef_pullback(R̄: Any) -> tuple:
        R̄ = unthunk(R̄)
        if is_zero(R̄) or np.ndim(Ω) == 0:  # one variable: R = C / C = 1
            return (_NO, _ZERO, *_y_cotangent(args, None))
        X, w, fact, back = _cov_setup(x, y, opts)
        s, R = _correlation(X)
        R̄ = np.reshape(R̄, R.shape)
        with np.errstate(divide="ignore", invalid="ignore"):
            t = np.real(np.conj(R̄) * R)
            s̄ = -(np.sum(t, axis=1) + np.sum(t, axis=0)) / s
            C̄ = R̄ / s[:, None] / s[None, :] + np.diag(s̄ / (2 * s))
        dx, dy = back(_cov_pullback(C̄, X, w, fact))
        return (_NO, project(x, dx), *_y_cotangent(args, dy))

    return Ω, corrcoef_pullback


def corrcoef_frule(ḟ: Any, *args: Any, **kwargs: Any) -> Any:
    """frule of ``np.corrcoef``: ``Ṙ = Ċ/(s sᵀ) - R (ṡ/s 1ᵀ + 1 (ṡ/s)ᵀ)``."""
    tangents, (x, *extra) = split_tangents(args)
    opts = bind_options(np.corrcoef, _CORRCOEF_ARGS, tuple(extra), kwargs)
    y = argument(extra, kwargs, 0, "y")
    Ω = np.corrcoef(x, *extra, **kwargs)
    Ẋ = _data_tangent(tangents, x, y, tuple(extra), opts)
    if Ẋ is None or np.ndim(Ω) == 0:
        return Ω, _ZERO
    X, w, fact, _ = _cov_setup(x, y, opts)
    s, R = _correlation(X)
    Ċ = _cov_pushforward(Ẋ, X, w, fact)
    with np.errstate(divide="ignore", invalid="ignore"):
        r = np.real(np.diagonal(Ċ)) / (2 * s * s)  # ṡ / s
        Ṙ = Ċ / s[:, None] / s[None, :] - R * (r[:, None] + r[None, :])
    return Ω, project(Ω, Ṙ)


rrule.register(np.corrcoef)(corrcoef_rrule)
frule.register(np.corrcoef)(corrcoef_frule)


# Index and position queries: integer or boolean outputs, no derivative
# (argpartition is with the other arg-functions in rules._numpy_selection).
for _name_ in "argwhere digitize isin unravel_index ravel_multi_index nanargmax nanargmin".split():
    non_differentiable(getattr(np, _name_))
