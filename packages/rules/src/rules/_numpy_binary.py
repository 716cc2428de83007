"""Rules for numpy's binary non-arithmetic ufuncs, ``np.clip`` and ``np.where``.

Every rule broadcasts like numpy: the frule adds ``∂f/∂x ẋ + ∂f/∂y ẏ`` on the
broadcast shape, and the pullback reduces ``ȳ ∂f/∂x`` back to each input's
shape with :func:`rules._util.unbroadcast` (Python scalars get Python floats,
float32 stays float32).

Ties: where ``maximum``/``minimum``/``fmax``/``fmin`` see equal arguments, the
gradient is split half and half between them (symmetric and deterministic,
and the same convention as the ``max``/``min`` reductions, which split it
equally among tied maxima). A NaN wins for ``maximum``/``minimum`` (it is what
numpy returns) and loses for ``fmax``/``fmin``. ``np.clip`` at a bound
(``x == lo``) sends the gradient to ``x``: the interval is closed.

The arithmetic ufuncs (``add``, ``power``, ...) are in the operator rules.

>>> import numpy as np
>>> from rulescore import rrule, unthunk
>>> y, pb = rrule(np.maximum, np.array([1.0, 2.0, 5.0]), 3.0)
>>> _, dx, dy = pb(np.ones(3))
>>> dx, unthunk(dy)     # the scalar gets the sum over the broadcast entries (computed lazily)
(array([0., 0., 1.]), 2.0)
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from rulescore import NoTangent, Thunk, ZeroTangent, frule, non_differentiable, rrule, unthunk

from ._numpy_elementwise import conj_if_complex, no_ufunc_kwargs
from ._util import asarray, is_zero, project, unbroadcast

__all__ = ["BINARY"]

_LN2 = float(np.log(2.0))


def _float_dtype(Ω: Any) -> Any:
    dt = np.result_type(Ω)
    return dt if dt.kind in "fc" else np.dtype(np.float64)


def _split(first: Any, tie: Any, Ω: Any) -> tuple[Any, Any]:
    """Weights (1, 0) where ``first``, (½, ½) where ``tie``, else (0, 1)."""
    wx = np.where(first, 1.0, np.where(tie, 0.5, 0.0)).astype(_float_dtype(Ω))
    return wx, 1 - wx


def _maximum_first(x: Any, y: Any) -> Any:
    return (x > y) | np.isnan(x)


def _minimum_first(x: Any, y: Any) -> Any:
    return (x < y) | np.isnan(x)


def _fmax_first(x: Any, y: Any) -> Any:
    return (x > y) | np.isnan(y)


def _fmin_first(x: Any, y: Any) -> Any:
    return (x < y) | np.isnan(y)


# ufunc -> (x, y) -> where the output is x's entry (ties excluded).
_FIRST: dict[Any, Callable[[Any, Any], Any]] = {
    np.maximum: _maximum_first,
    np.minimum: _minimum_first,
    np.fmax: _fmax_first,
    np.fmin: _fmin_first,
}


def _maximum_partials(x: Any, y: Any, Ω: Any) -> tuple:
    return _split(_maximum_first(x, y), x == y, Ω)


def _minimum_partials(x: Any, y: Any, Ω: Any) -> tuple:
    return _split(_minimum_first(x, y), x == y, Ω)


def _fmax_partials(x: Any, y: Any, Ω: Any) -> tuple:
    return _split(_fmax_first(x, y), x == y, Ω)


def _fmin_partials(x: Any, y: Any, Ω: Any) -> tuple:
    return _split(_fmin_first(x, y), x == y, Ω)


def _arctan2_partials(x1: Any, x2: Any, Ω: Any) -> tuple:
    # arctan2(x1, x2) = arg(x2 + i x1)
    r2 = np.square(x1) + np.square(x2)
    return x2 / r2, -x1 / r2


def _hypot_partials(x: Any, y: Any, Ω: Any) -> tuple:
    # At (0, 0) the cone has no derivative; 0 is its smallest subgradient.
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(Ω == 0, 0.0, x / Ω), np.where(Ω == 0, 0.0, y / Ω)


def _copysign_partials(x1: Any, x2: Any, Ω: Any) -> tuple:
    # |x1| with x2's sign: ±1 in x1, piecewise constant (zero) in x2.
    same = np.signbit(x1) == np.signbit(x2)
    return np.where(same, 1.0, -1.0).astype(_float_dtype(Ω)), ZeroTangent()


def _ldexp_partials(x1: Any, x2: Any, Ω: Any) -> tuple:
    # x1 · 2**x2 with an integer exponent: no derivative in x2.
    return np.ldexp(np.ones_like(x1, dtype=_float_dtype(Ω)), x2), NoTangent()


def _heaviside_partials(x1: Any, x2: Any, Ω: Any) -> tuple:
    # A step: zero in x1 (away from 0); the value at 0 is x2 exactly there.
    return ZeroTangent(), (asarray(x1) == 0).astype(_float_dtype(Ω))


# ufunc -> (x, y, Ω) -> (∂f/∂x, ∂f/∂y); an AbstractZero partial means none flows.
BINARY: dict[Any, Callable[[Any, Any, Any], tuple]] = {
    np.maximum: _maximum_partials,
    np.minimum: _minimum_partials,
    np.fmax: _fmax_partials,
    np.fmin: _fmin_partials,
    np.logaddexp: lambda x, y, Ω: (np.exp(x - Ω), np.exp(y - Ω)),
    np.logaddexp2: lambda x, y, Ω: (np.exp2(x - Ω), np.exp2(y - Ω)),
    np.arctan2: _arctan2_partials,
    np.hypot: _hypot_partials,
    np.copysign: _copysign_partials,
    np.ldexp: _ldexp_partials,
    np.heaviside: _heaviside_partials,
}


def _arr(x: Any) -> Any:
    return asarray(x) if isinstance(x, (list, tuple)) else x


def _as_output_tangent(Ω: Any, dΩ: Any) -> Any:
    """``dΩ`` made a tangent of ``Ω``: broadcast (into a fresh, writable array) and projected."""
    if is_zero(dΩ):
        return dΩ
    if np.shape(dΩ) != np.shape(Ω):
        dΩ = np.broadcast_to(dΩ, np.shape(Ω)).copy()
    return project(Ω, dΩ)


def _cotangent(x: Any, ȳ: Any, p: Any) -> Any:
    if is_zero(p):
        return p
    return unbroadcast(x, ȳ * conj_if_complex(p))


def _selected(x: Any, ȳ: Any, mask: Any, Ω: Any) -> Any:
    """``unbroadcast(x, ȳ * mask)``: eager for an argument of the output's shape (the
    cotangent is used), a thunk for one that must be summed (a constant bound such as
    the ``0.0`` of ``np.maximum(z, 0.0)``, whose cotangent is usually dropped)."""
    if type(x) is np.ndarray and x.shape == Ω.shape:
        return unbroadcast(x, ȳ * mask)
    return Thunk(lambda: unbroadcast(x, ȳ * mask))


def _register_binary(f: Any, partials: Callable[[Any, Any, Any], tuple]) -> None:
    name = f.__name__
    first_of = _FIRST.get(f)

    def binary_rrule(x: Any, y: Any, **kwargs: Any) -> Any:
        no_ufunc_kwargs(f, kwargs)
        Ω = f(x, y)

        def binary_pullback(ȳ: Any) -> tuple:
            ȳ = unthunk(ȳ)
            if is_zero(ȳ):
                return NoTangent(), ZeroTangent(), ZeroTangent()
            xa, ya = _arr(x), _arr(y)
            if (
                first_of is not None
                and type(Ω) is np.ndarray
                and Ω.dtype.kind == "f"
                and type(ȳ) is np.ndarray
                and ȳ.dtype == Ω.dtype
            ):
                # maximum & co. without ties: the weights are exactly 1 and 0, so
                # multiplying by the boolean masks gives what _split's weights give.
                first = first_of(xa, ya)
                if not np.any(xa == ya):
                    return NoTangent(), _selected(x, ȳ, first, Ω), _selected(y, ȳ, ~first, Ω)
            px, py = partials(xa, ya, Ω)
            return NoTangent(), _cotangent(x, ȳ, px), _cotangent(y, ȳ, py)

        binary_pullback.__name__ = binary_pullback.__qualname__ = f"{name}_pullback"
        return Ω, binary_pullback

    def binary_frule(ḟ: Any, ẋ: Any, ẏ: Any, x: Any, y: Any, **kwargs: Any) -> Any:
        no_ufunc_kwargs(f, kwargs)
        Ω = f(x, y)
        ẋ, ẏ = unthunk(ẋ), unthunk(ẏ)
        if is_zero(ẋ) and is_zero(ẏ):
            return Ω, ZeroTangent()
        px, py = partials(_arr(x), _arr(y), Ω)
        return Ω, _as_output_tangent(Ω, px * ẋ + py * ẏ)

    binary_rrule.__name__ = binary_rrule.__qualname__ = f"{name}_rrule"
    binary_frule.__name__ = binary_frule.__qualname__ = f"{name}_frule"
    rrule.register(f)(binary_rrule)
    frule.register(f)(binary_frule)


for _f, _p in BINARY.items():
    _register_binary(_f, _p)


_NOVALUE = np._NoValue


def _clip_bounds(args: tuple, kwargs: dict) -> tuple[Any, Any]:
    """(lo, hi) of ``np.clip(x, *args, **kwargs)``; ``None`` for a missing bound."""
    if len(args) > 2 or kwargs.get("out") is not None:
        raise TypeError(
            "the rule for numpy.clip does not support out=.\n"
            "To fix: write y = np.clip(x, lo, hi) and assign y afterwards."
        )
    lo = args[0] if args else kwargs.get("a_min", kwargs.get("min", None))
    hi = args[1] if len(args) > 1 else kwargs.get("a_max", kwargs.get("max", None))
    lo = None if lo is _NOVALUE else lo
    hi = None if hi is _NOVALUE else hi
    return lo, hi


def _clipped(x: Any, lo: Any, hi: Any, kwargs: dict) -> Any:
    """``np.clip(x, lo, hi)`` with the bounds found by ``_clip_bounds``: the method
    ``x.clip(lo)`` takes one bound alone, which ``np.clip`` may not positionally."""
    rest = {k: v for k, v in kwargs.items() if k not in ("a_min", "a_max", "min", "max")}
    return np.clip(x, lo, hi, **rest)


def _clip_masks(x: Any, lo: Any, hi: Any) -> tuple[Any, Any, Any]:
    """Where the output is ``x``, ``lo`` and ``hi``: numpy computes min(max(x, lo), hi)."""
    x = asarray(x)
    m = x if lo is None else np.maximum(x, lo)
    to_hi = np.zeros(m.shape, bool) if hi is None else m > hi
    to_lo = np.zeros(m.shape, bool) if lo is None else (x < lo) & ~to_hi
    to_x = ~(to_hi | to_lo)
    return to_x, to_lo, to_hi


@rrule.register(np.ndarray.clip)  # x.clip(lo, hi): the same arguments
@rrule.register(np.clip)
def _(x, *args, **kwargs):
    lo, hi = _clip_bounds(args, kwargs)
    Ω = _clipped(x, lo, hi, kwargs)

    def clip_pullback(ȳ):
        ȳ = unthunk(ȳ)
        if is_zero(ȳ):
            return (NoTangent(), ZeroTangent(), *(ZeroTangent() for _ in args))
        ȳ = np.broadcast_to(ȳ, np.shape(Ω))
        masks = _clip_masks(x, lo, hi)
        out = [unbroadcast(x, np.where(masks[0], ȳ, 0))]
        for bound, mask in zip(args, masks[1:]):  # bounds passed by keyword get nothing
            out.append(NoTangent() if bound is None else unbroadcast(bound, np.where(mask, ȳ, 0)))
        return (NoTangent(), *out)

    return Ω, clip_pullback


@frule.register(np.ndarray.clip)
@frule.register(np.clip)
def _(ḟ, *args, **kwargs):
    n = len(args) // 2
    tangents, (x, *bounds) = args[:n], args[n:]
    lo, hi = _clip_bounds(tuple(bounds), kwargs)
    Ω = _clipped(x, lo, hi, kwargs)
    masks = _clip_masks(x, lo, hi)
    dΩ: Any = ZeroTangent()
    for t, mask in zip(tangents, masks):
        t = unthunk(t)
        if not is_zero(t):
            dΩ = dΩ + np.where(mask, t, 0)
    return Ω, _as_output_tangent(Ω, dΩ)


non_differentiable(np.where, object)  # np.where(cond): the indices of the True entries


@rrule.register(np.where)
def _(cond, x, y):
    Ω = np.where(cond, x, y)

    def where_pullback(ȳ):
        ȳ = unthunk(ȳ)
        if is_zero(ȳ):
            return NoTangent(), NoTangent(), ZeroTangent(), ZeroTangent()
        ȳ = np.broadcast_to(ȳ, np.shape(Ω))
        return (
            NoTangent(),
            NoTangent(),
            unbroadcast(x, np.where(cond, ȳ, 0)),
            unbroadcast(y, np.where(cond, 0, ȳ)),
        )

    return Ω, where_pullback


@frule.register(np.where)
def _(ḟ, ċ, ẋ, ẏ, cond, x, y):
    Ω = np.where(cond, x, y)
    ẋ, ẏ = unthunk(ẋ), unthunk(ẏ)
    if is_zero(ẋ) and is_zero(ẏ):
        return Ω, ZeroTangent()
    dΩ = np.where(cond, 0 if is_zero(ẋ) else ẋ, 0 if is_zero(ẏ) else ẏ)
    return Ω, _as_output_tangent(Ω, dΩ)
