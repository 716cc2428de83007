"""Rules for the ``cmath`` module.

The holomorphic functions (``exp``, ``log``, ``sqrt``, the trigonometric and
hyperbolic functions and their inverses, ``rect``) are registered with
``scalar_rule``: the pullback is ``ȳ * conj(f'(z))`` (ChainRules' convention;
a real argument keeps the real part). At a branch point where the function is
finite and its derivative is not (``sqrt(0)``, ``asin(±1)``) the partial is a
complex infinity instead of a ``ZeroDivisionError``; ``cmath.log(0)`` raises
``ValueError`` as ``cmath`` does.

``phase`` and ``polar`` are real-valued, so not holomorphic; written by hand:
for a real cotangent ``φ̄`` of ``phase(z)``, ``∂z = φ̄ · i z / |z|²`` (the
gradient ``∂φ/∂re + i ∂φ/∂im``), and for ``r = |z|``, ``∂z = r̄ · z / |z|``;
both are 0 at ``z = 0``.
"""

from __future__ import annotations

import cmath as _cmath_module
import numbers
import types
from typing import Any

from rulescore import (
    AbstractZero,
    NoTangent,
    ProjectTo,
    Tangent,
    ZeroTangent,
    frule,
    non_differentiable,
    rrule,
    scalar_rule,
    unthunk,
)

from ._sequences import seq_entries

#: ``cmath`` as it was at import: the rules below call its functions (partials,
#: values), and a user's temporary ``cmath.sin = ...`` must change the user's code,
#: never these derivatives.
cmath = types.SimpleNamespace(**vars(_cmath_module))

__all__: list[str] = []

_NO = NoTangent()
_ZERO = ZeroTangent()
_CINF = complex(float("inf"), 0.0)


def _inv(z: complex) -> complex:
    """``1 / z``, a complex infinity at 0 instead of ``ZeroDivisionError``."""
    return _CINF if z == 0 else 1 / z


def _log_partials(z: complex, *rest: complex) -> Any:
    if len(rest) == 1:
        return _inv(z)
    base, Ω = rest  # log(z, base) = log(z) / log(base)
    lb = cmath.log(base)
    return _inv(z * lb), -Ω * _inv(base * lb)


_PARTIALS: dict[str, Any] = {
    "exp": lambda z, Ω: Ω,
    "log": _log_partials,
    "log10": lambda z, Ω: _inv(z * cmath.log(10)),
    "sqrt": lambda z, Ω: _inv(2 * Ω),
    "sin": lambda z, Ω: cmath.cos(z),
    "cos": lambda z, Ω: -cmath.sin(z),
    "tan": lambda z, Ω: 1 + Ω * Ω,
    # The inverse functions' derivatives from their value Ω (asin' = 1/cos Ω, ...):
    # on a branch cut (asin(1.5): real x > 1) they are the side cmath's value is on,
    # which square roots of 1 - z² computed from z cannot tell (0.0 - 0.0 is +0.0).
    "asin": lambda z, Ω: _inv(cmath.cos(Ω)),
    "acos": lambda z, Ω: -_inv(cmath.sin(Ω)),
    "atan": lambda z, Ω: _inv((1 - 1j * z) * (1 + 1j * z)),
    "sinh": lambda z, Ω: cmath.cosh(z),
    "cosh": lambda z, Ω: cmath.sinh(z),
    "tanh": lambda z, Ω: 1 - Ω * Ω,
    "asinh": lambda z, Ω: _inv(cmath.cosh(Ω)),
    "acosh": lambda z, Ω: _inv(cmath.sinh(Ω)),
    "atanh": lambda z, Ω: _inv((1 - z) * (1 + z)),
    # rect(r, φ) = r e^{iφ} with real r and φ: the projection keeps the real parts.
    "rect": lambda r, φ, Ω: (cmath.exp(1j * φ), 1j * Ω),
}


def _complex_partials(partials: Any) -> Any:
    """Partials as complex numbers, so a real argument's tangent pushes forward to a complex one."""

    def complex_partials(*args: Any) -> Any:
        ps = partials(*args)
        return tuple(map(complex, ps)) if isinstance(ps, tuple) else complex(ps)

    return complex_partials


for _name, _partials in _PARTIALS.items():
    scalar_rule(getattr(cmath, _name), _complex_partials(_partials))

for _f in (cmath.isnan, cmath.isinf, cmath.isfinite, cmath.isclose):
    non_differentiable(_f)


def _real(t: Any) -> Any:
    """The real part of a cotangent of a real output (a zero stays a zero)."""
    t = unthunk(t)
    return t if isinstance(t, AbstractZero) else complex(t).real


def _phase_grad(z: complex) -> complex:
    """``∂phase/∂re + i ∂phase/∂im = i z / |z|²`` (0 at the origin)."""
    r2 = abs(z) ** 2
    return 0j if r2 == 0 else 1j * z / r2


def _abs_grad(z: complex) -> complex:
    """``∂|z|/∂re + i ∂|z|/∂im = z / |z|`` (0 at the origin)."""
    r = abs(z)
    return 0j if r == 0 else z / r


def _pushforward(grad: complex, ż: Any) -> Any:
    """``re(conj(grad) ż)``: the directional derivative of a real function of ``z``."""
    ż = unthunk(ż)
    if isinstance(ż, AbstractZero):
        return ż
    return (grad.conjugate() * complex(ż)).real


@rrule.register(cmath.phase)
def _(z: numbers.Number):
    Ω = cmath.phase(z)

    def phase_pullback(φ̄):
        φ̄ = _real(φ̄)
        if isinstance(φ̄, AbstractZero):
            return _NO, _ZERO
        return _NO, ProjectTo(z)(φ̄ * _phase_grad(complex(z)))

    return Ω, phase_pullback


@frule.register(cmath.phase)
def _(ḟ, ż, z: numbers.Number):
    return cmath.phase(z), _pushforward(_phase_grad(complex(z)), ż)


@rrule.register(cmath.polar)
def _(z: numbers.Number):
    Ω = cmath.polar(z)

    def polar_pullback(ȳ):
        r̄, φ̄ = (_real(v) for v in seq_entries(ȳ, 2))
        c = complex(z)
        dz = _ZERO + r̄ * _abs_grad(c) + φ̄ * _phase_grad(c)
        return _NO, ProjectTo(z)(dz)

    return Ω, polar_pullback


@frule.register(cmath.polar)
def _(ḟ, ż, z: numbers.Number):
    c = complex(z)
    ṙ = _pushforward(_abs_grad(c), ż)
    φ̇ = _pushforward(_phase_grad(c), ż)
    return cmath.polar(z), Tangent[tuple](ṙ, φ̇)


# --- number methods ----------------------------------------------------------


def _conj_value(v: Any) -> Any:
    return v.conjugate() if hasattr(v, "conjugate") else v


@rrule.register(complex.conjugate)
def _(z: complex):
    def conjugate_pullback(ȳ):
        ȳ = unthunk(ȳ)
        if isinstance(ȳ, AbstractZero):
            return _NO, ȳ
        return _NO, complex(_conj_value(ȳ))

    return z.conjugate(), conjugate_pullback


@frule.register(complex.conjugate)
def _(ḟ, ż, z: complex):
    ż = unthunk(ż)
    return z.conjugate(), ż if isinstance(ż, AbstractZero) else complex(_conj_value(ż))


for _method in (float.conjugate, int.conjugate):

    @rrule.register(_method)
    def _(x: numbers.Real):
        def real_conjugate_pullback(ȳ):
            ȳ = unthunk(ȳ)
            return _NO, ȳ if isinstance(ȳ, AbstractZero) else ProjectTo(x)(ȳ)

        return x.conjugate(), real_conjugate_pullback

    @frule.register(_method)
    def _(ḟ, ẋ, x: numbers.Real):
        return x.conjugate(), ẋ
