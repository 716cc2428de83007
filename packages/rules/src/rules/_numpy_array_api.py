"""Rules for numpy 2's array-API functions: ``cumulative_sum``, ``cumulative_prod``,
``matvec``, ``vecmat``, ``unstack``, ``astype``; and ``nancumsum``, ``nancumprod``.

* ``cumulative_sum``/``cumulative_prod`` are ``cumsum``/``cumprod`` with
  keyword-only options and ``include_initial=True`` prepending the empty sum
  (0) or product (1), a constant: the rules reuse
  :mod:`rules._numpy_cumulative`'s (exact with zeros for the product).
* ``nancumsum``/``nancumprod`` treat NaN as 0 / 1: a NaN entry gets a zero
  cotangent and its tangent is ignored; the others are differentiated as in
  ``cumsum``/``cumprod`` of the filled array.
* ``matvec(A, v) = A v`` and ``vecmat(v, A) = vᴴ A`` (numpy conjugates the
  vector): bilinear with broadcasting batch axes; ``vecmat`` is antilinear in
  ``v``, so ``v̄ = A conj(ȳ)`` (ChainRules' convention for non-holomorphic maps).
  Their ``axes``/``axis`` options are refused with an error.
* ``unstack`` is the inverse of ``stack`` (its cotangent: a tuple whose
  entries may be zeros); ``astype`` is ``ndarray.astype``'s rule.

>>> import numpy as np
>>> from rulescore import rrule
>>> y, pb = rrule(np.cumulative_sum, np.array([1.0, 2.0]), include_initial=True)
>>> y, pb(np.array([1.0, 10.0, 100.0]))[1]
(array([0., 1., 3.]), array([110., 100.]))
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numpy.lib.array_utils import normalize_axis_index

from rulescore import NoTangent, ZeroTangent, frule, rrule, unthunk

from ._linalg_util import entries
from ._numpy_cumulative import (
    cumprod_frule,
    cumprod_rrule,
    cumsum_frule,
    cumsum_rrule,
)
from ._numpy_linear import conj, dense, register_bilinear, register_linear, sum_to
from ._numpy_methods import _astype_adjoint
from ._numpy_reductions import bind_options
from ._numpy_selection import no_out
from ._util import asarray, is_zero, project

__all__: list[str] = []

_NO = NoTangent()
_ZERO = ZeroTangent()


# --- cumulative_sum, cumulative_prod ----------------------------------------------------


def _cumulative_axis(x: Any, axis: Any) -> int:
    """The axis numpy cumulates along (``None`` only for 1-d input, as numpy requires)."""
    return 0 if axis is None else normalize_axis_index(axis, np.ndim(x))


def _drop_initial(ȳ: Any, axis: int) -> Any:
    ȳ = asarray(ȳ)
    return np.take(ȳ, np.arange(1, ȳ.shape[axis]), axis=axis)


def _prepend_zero(ẏ: Any, axis: int) -> Any:
    ẏ = asarray(ẏ)
    shape = list(ẏ.shape)
    shape[axis] = 1
    return np.concatenate([np.zeros(shape, ẏ.dtype), ẏ], axis=axis)


def _cumulative_rrule(f: Any, inner_rrule: Any) -> Any:
    def cumulative_rrule(x: Any, **kw: Any) -> Any:
        no_out(f.__name__, kw.get("out"))
        y = f(x, **kw)
        axis = _cumulative_axis(x, kw.get("axis"))
        if y.dtype.kind in "biu":
            return y, _integer_pullback
        _, inner = inner_rrule(x, axis=axis, dtype=kw.get("dtype"))

        def cumulative_pullback(ȳ: Any) -> tuple:
            ȳ = unthunk(ȳ)
            if is_zero(ȳ):
                return (_NO, _ZERO)
            if kw.get("include_initial"):
                ȳ = _drop_initial(ȳ, axis)
            return inner(ȳ)

        cumulative_pullback.__name__ = f"{f.__name__}_pullback"
        return y, cumulative_pullback

    cumulative_rrule.__name__ = f"{f.__name__}_rrule"
    return cumulative_rrule


def _cumulative_frule(f: Any, inner_frule: Any) -> Any:
    def cumulative_frule(ḟ: Any, ẋ: Any, x: Any, **kw: Any) -> Any:
        no_out(f.__name__, kw.get("out"))
        y = f(x, **kw)
        if y.dtype.kind in "biu":
            return y, _NO
        axis = _cumulative_axis(x, kw.get("axis"))
        _, ẏ = inner_frule(ḟ, ẋ, x, axis=axis, dtype=kw.get("dtype"))
        if is_zero(ẏ):
            return y, ẏ
        if kw.get("include_initial"):
            ẏ = _prepend_zero(ẏ, axis)
        return y, project(y, ẏ)

    cumulative_frule.__name__ = f"{f.__name__}_frule"
    return cumulative_frule


def _integer_pullback(ȳ: Any) -> tuple:
    return (_NO, _NO)


for _f, _r, _fr in (
    (np.cumulative_sum, cumsum_rrule, cumsum_frule),
    (np.cumulative_prod, cumprod_rrule, cumprod_frule),
):
    rrule.register(_f)(_cumulative_rrule(_f, _r))
    frule.register(_f)(_cumulative_frule(_f, _fr))


# --- nancumsum, nancumprod --------------------------------------------------------------

_NANCUM_ARGS = ("axis", "dtype", "out")


def _nancum(f: Any, fill: float, inner_rrule: Any, inner_frule: Any) -> None:
    name = f.__name__

    def nancum_rrule(a: Any, *args: Any, **kw: Any) -> Any:
        opts = bind_options(f, _NANCUM_ARGS, args, kw)
        y = f(a, *args, **kw)
        nots = (_NO,) * len(args)
        nan = np.isnan(a)
        _, inner = inner_rrule(np.where(nan, fill, a), opts.get("axis"), opts.get("dtype"))

        def nancum_pullback(ȳ: Any) -> tuple:
            ȳ = unthunk(ȳ)
            if is_zero(ȳ):
                return (_NO, _ZERO, *nots)
            dx = unthunk(inner(ȳ)[1])
            return (_NO, dx if is_zero(dx) else project(a, np.where(nan, 0, dx)), *nots)

        nancum_pullback.__name__ = f"{name}_pullback"
        return y, nancum_pullback

    def nancum_frule(ḟ: Any, *args: Any, **kw: Any) -> Any:
        n = len(args) // 2
        ȧ, a, rest = unthunk(args[0]), args[n], args[n + 1 :]
        opts = bind_options(f, _NANCUM_ARGS, rest, kw)
        y = f(a, *rest, **kw)
        if is_zero(ȧ):
            return y, _ZERO
        nan = np.isnan(a)
        ȧ = np.where(nan, 0, ȧ)
        filled = np.where(nan, fill, a)
        _, ẏ = inner_frule(ḟ, ȧ, filled, axis=opts.get("axis"), dtype=opts.get("dtype"))
        return y, ẏ if is_zero(ẏ) else project(y, ẏ)

    nancum_rrule.__name__ = f"{name}_rrule"
    nancum_frule.__name__ = f"{name}_frule"
    rrule.register(f)(nancum_rrule)
    frule.register(f)(nancum_frule)


_nancum(np.nancumsum, 0.0, cumsum_rrule, cumsum_frule)
_nancum(np.nancumprod, 1.0, cumprod_rrule, cumprod_frule)


# --- matvec, vecmat ---------------------------------------------------------------------


def _check_gufunc(a: Any, b: Any, **kw: Any) -> None:
    bad = sorted(k for k in kw if k not in ("dtype", "casting", "order", "subok"))
    if bad:
        raise TypeError(
            f"the rules for numpy.matvec/vecmat do not support {', '.join(bad)}=.\n"
            "To fix: move the axes into place with np.moveaxis and call it without them."
        )


def _outer_last(u: Any, v: Any) -> Any:
    """``u[..., :, None] * v[..., None, :]``."""
    return asarray(u)[..., :, None] * asarray(v)[..., None, :]


def _matvec_grad_a(ȳ: Any, a: Any, b: Any, **kw: Any) -> Any:
    return sum_to(_outer_last(ȳ, conj(asarray(b))), np.shape(a))


def _matvec_grad_b(ȳ: Any, a: Any, b: Any, **kw: Any) -> Any:
    ah = conj(np.swapaxes(asarray(a), -1, -2))
    return sum_to(np.matvec(ah, asarray(ȳ)), np.shape(b))


def _vecmat_grad_a(ȳ: Any, a: Any, b: Any, **kw: Any) -> Any:
    return sum_to(np.matvec(asarray(b), conj(asarray(ȳ))), np.shape(a))


def _vecmat_grad_b(ȳ: Any, a: Any, b: Any, **kw: Any) -> Any:
    return sum_to(_outer_last(a, ȳ), np.shape(b))


register_bilinear(np.matvec, _matvec_grad_a, _matvec_grad_b, "matvec", check=_check_gufunc)
register_bilinear(np.vecmat, _vecmat_grad_a, _vecmat_grad_b, "vecmat", check=_check_gufunc)


# --- unstack, astype ---------------------------------------------------------------------


def _unstack_adjoint(ȳ: Any, x: Any, *, axis: int = 0) -> Any:
    x = asarray(x)
    ax = normalize_axis_index(axis, x.ndim)
    n = x.shape[ax]
    slab = x.shape[:ax] + x.shape[ax + 1 :]
    parts = [dense(t, np.zeros(slab, x.dtype)) for t in entries(ȳ, n)]
    return np.stack([np.broadcast_to(p, slab) for p in parts], axis=ax)


register_linear(np.unstack, _unstack_adjoint, "unstack")
register_linear(np.astype, _astype_adjoint, "astype")
