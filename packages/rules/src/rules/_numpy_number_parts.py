"""Rules for numpy functions that take numbers apart: ``frexp``, ``modf``, ``divmod``,
``fmod``, ``fix``; and ``unwrap``, ``real_if_close``.

* ``frexp(x) = (m, e)`` with ``x = m · 2**e``: the exponent is an integer,
  piecewise constant, so ``dm = dx / 2**e`` and ``e`` has no tangent.
* ``modf(x) = (x - trunc(x), trunc(x))``: the fractional part moves with ``x``
  (derivative 1), the integral part is piecewise constant (0).
* ``divmod(x1, x2) = (floor_divide, remainder)``: the quotient is piecewise
  constant; the remainder has ``np.remainder``'s rule (``∂x1 = 1``,
  ``∂x2 = -floor(x1 / x2)``).
* ``fmod(x1, x2) = x1 - x2 · trunc(x1 / x2)``: ``∂x1 = 1``, ``∂x2 = -trunc(x1 / x2)``
  (read exactly as ``(x1 - fmod) / x2``). ``fix`` rounds towards zero: zero.
* ``unwrap(p)`` adds multiples of the period that change only where a jump
  crosses ``discont``: the derivative is the identity (``period`` and
  ``discont`` get none).
* ``real_if_close(a)`` returns ``a.real`` when every imaginary part is
  negligible, otherwise ``a``: the rule follows the branch numpy took (the
  tangent of ``a.real`` is ``ẋ.real``).

At the discontinuities (integers for ``modf``, multiples of ``x2`` for
``fmod``) the one-sided derivatives differ; the rules give the one of the
piece numpy's value belongs to, as ``floor`` and ``trunc`` give zero there.

>>> import numpy as np
>>> from rulescore import rrule
>>> (m, e), pb = rrule(np.frexp, np.array([3.0, 0.5]))
>>> m, e, pb((np.ones(2), None))[1]
(array([0.75, 0.5 ]), array([2, 0], dtype=int32), array([0.25, 1.  ]))
"""

from __future__ import annotations

from typing import Any

import numpy as np

from rulescore import NoTangent, Tangent, ZeroTangent, frule, rrule, unthunk

from ._linalg_util import entries
from ._numpy_binary import _float_dtype, _register_binary
from ._numpy_elementwise import _register_constant, no_ufunc_kwargs
from ._numpy_linear import register_linear
from ._util import asarray, is_zero, project

__all__: list[str] = []

_NO = NoTangent()
_ZERO = ZeroTangent()


def _first(ȳ: Any, n: int) -> Any:
    """The cotangent of the first output of a ufunc with ``n`` outputs."""
    return unthunk(entries(ȳ, n)[0])


# --- frexp, modf, divmod ----------------------------------------------------------------


@rrule.register(np.frexp)
def frexp_rrule(x: Any, **kwargs: Any) -> Any:
    """rrule of ``np.frexp``: the mantissa's cotangent divided by ``2**e``."""
    no_ufunc_kwargs(np.frexp, kwargs)
    _, e = Ω = np.frexp(x)

    def frexp_pullback(ȳ: Any) -> tuple:
        m̄ = _first(ȳ, 2)
        if is_zero(m̄):
            return (_NO, _ZERO)
        return (_NO, project(x, np.ldexp(m̄, -e)))

    return Ω, frexp_pullback


@frule.register(np.frexp)
def frexp_frule(ḟ: Any, ẋ: Any, x: Any, **kwargs: Any) -> Any:
    """frule of ``np.frexp``: ``ṁ = ẋ / 2**e``, no tangent for ``e``."""
    no_ufunc_kwargs(np.frexp, kwargs)
    m, e = Ω = np.frexp(x)
    ẋ = unthunk(ẋ)
    ṁ = _ZERO if is_zero(ẋ) else project(m, np.ldexp(ẋ, -e))
    return Ω, Tangent[tuple](ṁ, _NO)


@rrule.register(np.modf)
def modf_rrule(x: Any, **kwargs: Any) -> Any:
    """rrule of ``np.modf``: the fractional part's cotangent goes to ``x``."""
    no_ufunc_kwargs(np.modf, kwargs)
    Ω = np.modf(x)

    def modf_pullback(ȳ: Any) -> tuple:
        f̄ = _first(ȳ, 2)
        return (_NO, f̄ if is_zero(f̄) else project(x, np.broadcast_to(f̄, np.shape(x))))

    return Ω, modf_pullback


@frule.register(np.modf)
def modf_frule(ḟ: Any, ẋ: Any, x: Any, **kwargs: Any) -> Any:
    """frule of ``np.modf``: the fractional part moves with ``x``, the integral part not."""
    no_ufunc_kwargs(np.modf, kwargs)
    frac, _ = Ω = np.modf(x)
    ẋ = unthunk(ẋ)
    if is_zero(ẋ):
        return Ω, _ZERO
    return Ω, Tangent[tuple](project(frac, np.broadcast_to(ẋ, np.shape(frac))), _ZERO)


@rrule.register(np.divmod)
def divmod_rrule(x1: Any, x2: Any, **kwargs: Any) -> Any:
    """rrule of ``np.divmod``: the remainder's cotangent through ``np.remainder``'s rule."""
    no_ufunc_kwargs(np.divmod, kwargs)
    Ω = np.divmod(x1, x2)
    _, remainder_pullback = rrule(np.remainder, x1, x2)

    def divmod_pullback(ȳ: Any) -> tuple:
        r̄ = unthunk(entries(ȳ, 2)[1])
        if is_zero(r̄):
            return (_NO, _ZERO, _ZERO)
        return remainder_pullback(r̄)

    return Ω, divmod_pullback


@frule.register(np.divmod)
def divmod_frule(ḟ: Any, ẋ1: Any, ẋ2: Any, x1: Any, x2: Any, **kwargs: Any) -> Any:
    """frule of ``np.divmod``: the quotient is piecewise constant."""
    no_ufunc_kwargs(np.divmod, kwargs)
    Ω = np.divmod(x1, x2)
    _, ṙ = frule((ḟ, ẋ1, ẋ2), np.remainder, x1, x2)
    return Ω, (ṙ if is_zero(ṙ) else Tangent[tuple](_ZERO, ṙ))


# --- fmod, fix ---------------------------------------------------------------------------


def _fmod_partials(x1: Any, x2: Any, Ω: Any) -> tuple:
    dtype = _float_dtype(Ω)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.ones(np.shape(Ω), dtype), -asarray((x1 - Ω) / x2, dtype)


_register_binary(np.fmod, _fmod_partials)
_register_constant(np.fix)


# --- unwrap, real_if_close ----------------------------------------------------------------


def _identity_adjoint(ȳ: Any, p: Any, *rest: Any, **kw: Any) -> Any:
    return np.broadcast_to(ȳ, np.shape(p))


def _unwrap_pushforward(ṗ: Any, *rest: Any, **kw: Any) -> Any:
    return ṗ


register_linear(np.unwrap, _identity_adjoint, "unwrap", pushforward=_unwrap_pushforward)


@rrule.register(np.real_if_close)
def real_if_close_rrule(a: Any, *rest: Any, **kw: Any) -> Any:
    """rrule of ``np.real_if_close``: the identity, or ``real`` when numpy dropped ``imag``."""
    y = np.real_if_close(a, *rest, **kw)
    nots = (_NO,) * len(rest)

    def real_if_close_pullback(ȳ: Any) -> tuple:
        ȳ = unthunk(ȳ)
        if is_zero(ȳ):
            return (_NO, _ZERO, *nots)
        return (_NO, project(a, np.real(ȳ) if y.dtype.kind != "c" else ȳ), *nots)

    return y, real_if_close_pullback


@frule.register(np.real_if_close)
def real_if_close_frule(ḟ: Any, *args: Any, **kw: Any) -> Any:
    """frule of ``np.real_if_close``."""
    n = len(args) // 2
    ȧ, a, rest = unthunk(args[0]), args[n], args[n + 1 :]
    y = np.real_if_close(a, *rest, **kw)
    if is_zero(ȧ):
        return y, _ZERO
    return y, project(y, np.real(ȧ) if y.dtype.kind != "c" else ȧ)
